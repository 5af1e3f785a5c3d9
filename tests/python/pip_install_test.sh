#!/usr/bin/env bash
# `pip install .` from the repository into a fresh venv of the interpreter attune._native was
# built for, offline: setup.py installs from this build tree (ATTUNE_CMAKE_BUILD_DIR) instead of
# building attune again, with Debian's setuptools and wheel (--no-build-isolation). The installed
# package must import outside the build tree and find its own CLI and libattune-rt.
#   pip_install_test.sh PYTHON SOURCE_DIR BUILD_DIR
set -euo pipefail
python=$1 src=$2 build=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$python" -m venv --system-site-packages "$tmp/venv"
ATTUNE_CMAKE_BUILD_DIR="$build" "$tmp/venv/bin/python" -m pip install -q --no-build-isolation \
  --no-deps --no-index "$src"
cd "$tmp"
env -u PYTHONPATH -u ATTUNE_BIN "$tmp/venv/bin/python" - "$src" <<'PY'
import os, sys
import attune
pkg = os.path.dirname(attune.__file__)
assert pkg.startswith(sys.prefix), f"imported {pkg}, not the venv's"
cli = attune.find_cli()
assert cli == os.path.join(pkg, "bin", "attune"), cli
t = attune.Table(os.path.join(sys.argv[1], "tests/python/fixtures/h200-table.json"))
assert t.lookup("gemm:bias=0,dtype=bf16,k=4096,m=1,n=4096")["tuned"]
report = attune.tune(backend="sim", problem="rmsnorm", max_candidates=3, patience=0,
                     db=os.path.join(os.getcwd(), "pip.db"))
assert report["problems"][0]["evaluated"] >= 1
print("installed at", pkg, "with", sorted(os.listdir(pkg)))
PY
