"""attune.Table: a tuned table's dispatch decisions without a GPU."""

import json
import os

from . import _native


class Table:
    """A tuned table opened as libattune-rt opens it: validated whole (format, version, every row,
    every row's config planned), refused with attune.Error (code "bad_table") otherwise.

    Table(path, device=None): `device` is the fingerprint to decide for, a dict as
    `attune device --json` prints it (or attune.Database(...).devices() returns); None decides for
    the table's own device. For another device the guard applies: every lookup is a miss.
    """

    def __init__(self, path, device=None):
        self.path = os.fspath(path)
        self._native = _native.Table(self.path, "" if device is None else json.dumps(device))

    @property
    def device(self) -> dict:
        """The fingerprint the table was tuned on."""
        return self._native.device

    @property
    def device_mismatch(self) -> bool:
        return self._native.device_mismatch

    def rows(self) -> list:
        """The rows libattune-rt dispatches, numbered as its log and attune verify number them."""
        return self._native.rows()

    def lookup(self, problem: str) -> dict:
        """What a call of `problem` (e.g. "gemm:bias=0,dtype=bf16,k=4096,m=3,n=4096") would run:
        tuned, row, why, backend, config. Counted in counters() as a Runtime counts calls."""
        return self._native.lookup(problem)

    def counters(self) -> dict:
        return self._native.counters()
