"""Where the interop tests find Kernel Tuner 1.5.0: a virtual environment cached between runs.

The venv lives in ${XDG_CACHE_HOME:-$HOME/.cache}/attune/kernel-tuner-1.5.0-venv (or
$ATTUNE_KT_VENV). setup_venv.py creates it once; every test script re-runs itself with its
python, or exits with SKIP (77) when there is none (PyPI was unreachable at setup).
Standard library only: this module runs under the system python3 first.
"""

import os
import subprocess
import sys

VERSION = "1.5.0"
SKIP = 77


def venv_dir():
    if os.environ.get("ATTUNE_KT_VENV"):
        return os.environ["ATTUNE_KT_VENV"]
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "attune", f"kernel-tuner-{VERSION}-venv")


def venv_python():
    return os.path.join(venv_dir(), "bin", "python")


def healthy():
    """The venv's python runs and imports kernel_tuner of the pinned version."""
    py = venv_python()
    if not os.access(py, os.X_OK):
        return False
    check = (
        "import importlib.metadata as m, kernel_tuner, numpy;"
        f"assert m.version('kernel_tuner') == '{VERSION}'"
    )
    return subprocess.run([py, "-c", check], capture_output=True).returncode == 0


def reexec_in_venv():
    """Called first by each test: continue under the venv's python, or skip without one."""
    if os.path.realpath(sys.prefix) == os.path.realpath(venv_dir()):
        return
    if not healthy():
        print(f"no Kernel Tuner {VERSION} venv at {venv_dir()} (setup skipped: PyPI unreachable)")
        sys.exit(SKIP)
    os.execv(venv_python(), [venv_python()] + sys.argv)
