"""attune.Error raised from Python code, with its `code` as the compiled bindings set it."""

from ._native import Error


def error(code: str, message: str) -> Error:
    e = Error(message)
    e.code = code
    return e
