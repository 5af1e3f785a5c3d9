"""ctest fixture: makes the Kernel Tuner 1.5.0 venv the interop tests run in, once.

Created only when missing or broken (a half-made one is removed first), built beside its final
place and renamed into it, so an interrupted setup never leaves a venv that looks healthy.
Exit 0: the venv is there; 77 (skip): none is, and PyPI (or $PIP_INDEX_URL) is unreachable;
1: the install failed for another reason.
"""

import os
import shutil
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ktenv  # noqa: E402


def index_reachable():
    index = os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple").rstrip("/")
    try:
        urllib.request.urlopen(index + "/kernel-tuner/", timeout=20).read(1)
        return True
    except Exception as e:  # noqa: BLE001 - any failure to reach it means the same here
        print(f"{index} is unreachable: {e}")
        return False


def main():
    target = ktenv.venv_dir()
    if ktenv.healthy():
        print(f"Kernel Tuner {ktenv.VERSION} venv: {target} (cached)")
        return 0
    if not index_reachable():
        return ktenv.SKIP
    building = target + ".building"
    shutil.rmtree(building, ignore_errors=True)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    start = time.monotonic()
    subprocess.run([sys.executable, "-m", "venv", building], check=True)
    pip = [os.path.join(building, "bin", "python"), "-m", "pip"]
    subprocess.run(pip + ["install", "--quiet", "--disable-pip-version-check",
                          f"kernel_tuner=={ktenv.VERSION}"], check=True)
    shutil.rmtree(target, ignore_errors=True)
    os.rename(building, target)
    if not ktenv.healthy():
        print(f"the venv at {target} was made but does not import kernel_tuner {ktenv.VERSION}")
        return 1
    print(f"Kernel Tuner {ktenv.VERSION} venv: {target} (installed in {time.monotonic() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
