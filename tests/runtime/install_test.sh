#!/usr/bin/env bash
# Installs libattune-rt to a temporary prefix and builds small programs against it, with CMake's
# find_package(attune) and with pkg-config, as a user would. Build only: running them needs the
# NVIDIA driver. Where no driver is installed, linking resolves libcuda.so.1 from the toolkit's stub.
#   install_test.sh BUILD_DIR SOURCE_DIR CUDA_STUBS_DIR
set -euo pipefail
build=$1 src=$2 stubs=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
cmake --install "$build" --prefix "$prefix" --component attune_runtime > "$tmp/install.log"
for f in include/attune/runtime.h include/attune/runtime_c.h; do
  [ -f "$prefix/$f" ] || { echo "not installed: $f"; exit 1; }
done
lib=$(find "$prefix" -name 'libattune-rt.so' | head -1)
[ -n "$lib" ] || { echo "libattune-rt.so not installed"; cat "$tmp/install.log"; exit 1; }
# Only the public API is exported. (grep reads all of nm's output: with -q it would stop at the
# first match, and nm's SIGPIPE would fail the pipeline under pipefail.)
if nm -D --defined-only "$lib" | grep 'attune[0-9]*table\|fmt[0-9]*v' > /dev/null; then
  echo "libattune-rt.so exports internals:"; nm -DC --defined-only "$lib" | grep -v 'attune::rt::\| attune_rt_' | head; exit 1
fi
for f in attune_rt_time_problem attune_rt_gemm_silu_mul attune_rt_gemm_fused attune_rt_gemm_rope_fused; do
  nm -D --defined-only "$lib" | grep " $f\$" > /dev/null || { echo "$f is not exported"; exit 1; }
done

echo "--- find_package(attune)"
cmake -S "$src/tests/runtime/consumer" -B "$tmp/cmake" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
      -DCMAKE_BUILD_TYPE=Release > "$tmp/configure.log" || { cat "$tmp/configure.log"; exit 1; }
cmake --build "$tmp/cmake" || exit 1

echo "--- pkg-config attune-runtime"
pc=$(dirname "$(find "$prefix" -name attune-runtime.pc | head -1)")
export PKG_CONFIG_PATH=$pc
flags=$(pkg-config --cflags attune-runtime) libs=$(pkg-config --libs attune-runtime)
echo "cflags: $flags  libs: $libs"
# The driver library, from the system where one is installed, else from the toolkit's stubs.
driver=""
ldconfig=$(command -v ldconfig || echo /sbin/ldconfig)
"$ldconfig" -p 2>/dev/null | grep -q 'libcuda.so.1 ' || driver="-L$stubs -lcuda"
cc $flags "$src/tests/runtime/consumer/consumer.c" -o "$tmp/consumer_c" $libs $driver
c++ -std=c++17 $flags "$src/tests/runtime/consumer/consumer.cpp" -o "$tmp/consumer_cpp" $libs $driver
echo "built"
