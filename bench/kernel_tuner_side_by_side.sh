#!/usr/bin/env bash
# Sets up Kernel Tuner from PyPI in a virtual environment (once, in .venv-kt at the repository
# root; needs python3-venv and network access to PyPI) and runs its strategies on the recorded
# spaces. Arguments go to kernel_tuner_side_by_side.py (--datasets DIR --seeds N --budget N ...).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="${ATTUNE_KT_VENV:-$here/../.venv-kt}"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import kernel_tuner" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet kernel_tuner
fi
exec "$venv/bin/python" "$here/kernel_tuner_side_by_side.py" "$@"
