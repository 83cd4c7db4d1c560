#!/usr/bin/env bash
# One run on a GPU machine without network: builds chute (CLI, Python extension, the CUDA tests)
# against Debian 12 packages carried as .deb files, runs the CUDA tests (C++ and Python with
# PyTorch and JAX) and the GPU benchmarks, and writes at most 8 files to $OUT:
#   build.log  tests.log  bench.log  w1.json  w3.json  summary.txt  machine.txt  (+ cuda_tests.xml)
#
#   OUT=/tmp/out bash scripts/gpu_check.sh          # from the repository root, or anywhere
#
# Needs: .gpu-debs/*.deb (the -dev packages of chute's dependencies and their libraries:
# `apt-get download` on Debian 12) and .gpu-debs/wheels/*.whl (pytest, zarr-python for the W1
# peer), made by `scripts/gpu_check.sh --download` on a machine with network. Without a CUDA
# driver it builds and stops before the GPU parts (a dry run of the build from the .deb files).
# Environment: CHUTE_GPU_PYTHON (default /opt/torch/.venv/bin/python, else python3),
# CHUTE_GPU_DEPS (the prefix the .deb files are unpacked in, default /tmp/chute-deps),
# CHUTE_GPU_QUICK=1 (smaller benchmarks, for a dry run), CHUTE_GPU_ONLY=packed|volume|bench
# (no CUDA tests; only the W1 packed or the W3 volume benchmark, or both: a quicker rerun).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
REPO=$PWD

DEBS=(
  libblosc-dev libzstd-dev liblz4-dev zlib1g-dev libdeflate-dev nlohmann-json3-dev libcli11-dev libfmt-dev
  libgtest-dev libgmock-dev libhdf5-dev libcurl4-openssl-dev libssl-dev libexpat1-dev
  libbz2-dev liblzf-dev libaec-dev libbz2-1.0 liblzf1 libdeflate0
  pkgconf pkgconf-bin libpkgconf3
  # the libraries they link, and theirs (libc, libstdc++, libgcc are the machine's)
  libaec0 libblosc1 libbrotli1 libcurl4 libffi8 libfmt9 libgmp10 libgnutls30 libgssapi-krb5-2
  libhdf5-103-1 libhogweed6 libidn2-0 libk5crypto3 libkrb5-3 libkrb5support0 libldap-2.5-0
  liblz4-1 libnettle8 libnghttp2-14 libp11-kit0 libpsl5 librtmp1 libsasl2-2 libsnappy1v5
  libssh2-1 libssl3 libsz2 libtasn1-6 libunistring2 libzstd1 zlib1g libexpat1 libcom-err2
  libkeyutils1 libsasl2-modules-db libdb5.3
)
WHEELS=(pytest pluggy iniconfig packaging pygments zarr==3.1.5 numcodecs==0.16.6 donfig
        google-crc32c typing_extensions pyyaml)

if [ "${1:-}" = "--download" ]; then
  mkdir -p .gpu-debs/wheels
  (cd .gpu-debs && apt-get download "${DEBS[@]}")
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux_2_28_x86_64 -d .gpu-debs/wheels "${WHEELS[@]}"
  grep -qx '.gpu-debs/' "$(git rev-parse --git-common-dir)/info/exclude" ||
    echo '.gpu-debs/' >>"$(git rev-parse --git-common-dir)/info/exclude"
  du -sh .gpu-debs
  exit 0
fi

OUT=${OUT:-/tmp/chute-gpu-out}
mkdir -p "$OUT"
PY=${CHUTE_GPU_PYTHON:-/opt/torch/.venv/bin/python}
[ -x "$PY" ] || PY=$(command -v python3)
DEPS=${CHUTE_GPU_DEPS:-/tmp/chute-deps}
JOBS=$(nproc)
BUILD=$REPO/build/gpu
QUICK=${CHUTE_GPU_QUICK:-0}
SUMMARY=$OUT/summary.txt
START=$(date +%s)
: >"$SUMMARY"
note() { echo "[$(($(date +%s) - START))s] $*" | tee -a "$SUMMARY"; }
BUDGET=${CHUTE_GPU_BUDGET_S:-540}  # seconds: later steps are skipped past it
left() { echo $((BUDGET - ($(date +%s) - START))); }

# --- the machine ------------------------------------------------------------------------------
{
  date -u; uname -a; nproc; free -g; cat /etc/os-release 2>/dev/null | head -3
  nvidia-smi 2>&1 | head -20
  nvidia-smi -q 2>/dev/null | grep -iE "product name|link (gen|width)|max|current" | head -20
  "$PY" -c 'import sys, numpy, torch; print(sys.version); print("numpy", numpy.__version__);
print("torch", torch.__version__, torch.version.cuda, torch.cuda.is_available())' 2>&1
  "$PY" -c 'import jax; print("jax", jax.__version__, jax.devices())' 2>&1 | tail -1
  ldd --version | head -1; cmake --version | head -1; g++ --version | head -1
} >"$OUT/machine.txt" 2>&1
note "machine: $(nproc) cores; python $PY"

# --- dependencies from the .deb files -----------------------------------------------------------
if ! ls .gpu-debs/*.deb >/dev/null 2>&1; then
  note "FAILED: no .gpu-debs/*.deb (run scripts/gpu_check.sh --download where there is network)"
  exit 1
fi
rm -rf "$DEPS" && mkdir -p "$DEPS"
unpack() {  # a .deb into $DEPS: dpkg-deb where there is one, else ar + tar
  if command -v dpkg-deb >/dev/null; then
    dpkg-deb -x "$1" "$DEPS"
  else
    local member flag=-J
    member=$(ar t "$1" | grep '^data\.tar') || return 1
    case $member in *.zst) flag=--zstd ;; *.gz) flag=-z ;; esac
    ar p "$1" "$member" | tar -x "$flag" -C "$DEPS"
  fi
}
for deb in .gpu-debs/*.deb; do unpack "$deb" || note "unpacking $deb failed"; done
ARCH_LIB=$DEPS/usr/lib/x86_64-linux-gnu
# Debian 12 packages still install some libraries under /lib: one folder for the linker.
if [ -d "$DEPS/lib/x86_64-linux-gnu" ]; then
  cp -an "$DEPS/lib/x86_64-linux-gnu/." "$ARCH_LIB/"
fi
# Absolute symbolic links (libz.so -> /lib/...) point into the machine: re-point them here.
find "$DEPS" -type l | while read -r link; do
  target=$(readlink "$link")
  case $target in
    /*) [ -e "$DEPS$target" ] && ln -sfn "$DEPS$target" "$link" ||
          ln -sfn "$ARCH_LIB/$(basename "$target")" "$link" ;;
  esac
done
# libhdf5-dev's hdf5.pc is an alternatives link; the serial build's file is the one.
ln -sfn hdf5-serial.pc "$ARCH_LIB/pkgconfig/hdf5.pc"
export PKG_CONFIG_SYSROOT_DIR=$DEPS
export PKG_CONFIG_LIBDIR=$ARCH_LIB/pkgconfig:$DEPS/usr/share/pkgconfig
export LD_LIBRARY_PATH=$ARCH_LIB:$ARCH_LIB/hdf5/serial${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
PKG_CONFIG=$DEPS/usr/bin/pkgconf
[ -x "$PKG_CONFIG" ] || PKG_CONFIG=$(command -v pkg-config)
note "dependencies unpacked into $DEPS ($(du -sh "$DEPS" | cut -f1)); pkg-config: $PKG_CONFIG"

# Python packages the machine lacks (pytest; zarr-python for the W1 DataLoader peer).
PYDEPS=$DEPS/python
mkdir -p "$PYDEPS"
for module in pytest zarr; do
  if ! "$PY" -c "import $module" 2>/dev/null && ls .gpu-debs/wheels/*.whl >/dev/null 2>&1; then
    "$PY" -m pip install -q --no-index --no-deps --target "$PYDEPS" .gpu-debs/wheels/*.whl \
      >>"$OUT/build.log" 2>&1 || note "pip install of the carried wheels failed"
    break
  fi
done

# --- build --------------------------------------------------------------------------------------
note "configure + build (unity, -j$JOBS)"
{
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCHUTE_UNITY_BUILD=ON \
    -DCHUTE_BUILD_PYTHON=ON -DCHUTE_BUILD_TESTS=ON -DCHUTE_WITH_MPI=OFF -DCHUTE_INSTALL=OFF \
    -DCMAKE_PREFIX_PATH="$DEPS/usr" -DPKG_CONFIG_EXECUTABLE="$PKG_CONFIG" \
    -DCMAKE_BUILD_RPATH="$ARCH_LIB;$ARCH_LIB/hdf5/serial" \
    -DPython_EXECUTABLE="$PY" &&
    cmake --build "$BUILD" -j"$JOBS" --target chute_cli _chute _bench chute_cuda_tests
} >>"$OUT/build.log" 2>&1 || {
  # A unity batch can clash on names a file-by-file build never sees: build file by file then.
  note "unity build failed; building file by file"
  cmake "$BUILD" -DCHUTE_UNITY_BUILD=OFF >>"$OUT/build.log" 2>&1 &&
    cmake --build "$BUILD" -j"$JOBS" --target chute_cli _chute _bench chute_cuda_tests \
      >>"$OUT/build.log" 2>&1
}
if [ $? -ne 0 ]; then
  note "FAILED: build (see build.log)"
  tail -30 "$OUT/build.log" >>"$SUMMARY"
  exit 1
fi
grep -E "Found|chute:" "$OUT/build.log" | head -20 >>"$OUT/build.log.found" 2>/dev/null
rm -f "$OUT/build.log.found"
note "built: $(cd "$BUILD" && ls tools/chute/cli/chute python/_chute*.so tests/chute_cuda_tests | tr '\n' ' ')"

# The Python package: the sources plus the two extensions, importable from one folder.
PKG=$BUILD/pypkg
rm -rf "$PKG" && mkdir -p "$PKG/chute"
cp -r python/chute/. "$PKG/chute/" && rm -rf "$PKG"/chute/__pycache__ "$PKG"/chute/*/__pycache__
cp "$BUILD"/python/_chute*.so "$BUILD"/python/_bench*.so "$PKG/chute/"
export PYTHONPATH=$PKG:$PYDEPS${PYTHONPATH:+:$PYTHONPATH}
export CHUTE_PYTHON=$PY
export CHUTE_CLI=$BUILD/tools/chute/cli/chute
export PATH=$BUILD/tools/chute/cli:$PATH
"$PY" -c 'import chute; print("chute", chute.__file__)' >>"$OUT/build.log" 2>&1 ||
  note "FAILED: import chute (see build.log)"

if ! "$PY" -c 'import ctypes; ctypes.CDLL("libcuda.so.1")' 2>/dev/null; then
  note "no CUDA driver here: build checked, GPU parts skipped"
  "$BUILD/tests/chute_cuda_tests" --gtest_brief=1 >>"$OUT/tests.log" 2>&1
  note "chute_cuda_tests without a driver: exit $? (all skipped)"
  exit 0
fi

ONLY=${CHUTE_GPU_ONLY:-}
case "$ONLY" in
  "" | packed | volume | bench) ;;
  *) note "CHUTE_GPU_ONLY=$ONLY: expected packed, volume or bench"; exit 2 ;;
esac

# --- CUDA tests ---------------------------------------------------------------------------------
if [ -n "$ONLY" ]; then
  note "CHUTE_GPU_ONLY=$ONLY: CUDA tests skipped"
else
note "CUDA tests (C++)"
timeout 120 "$BUILD/tests/chute_cuda_tests" --gtest_output="xml:$OUT/cuda_tests.xml" \
  >>"$OUT/tests.log" 2>&1
note "chute_cuda_tests: exit $? ($(grep -cE '^\[       OK' "$OUT/tests.log") ok, $(grep -cE '^\[  FAILED' "$OUT/tests.log") failed lines)"
note "CUDA tests (Python: torch, jax)"
CHUTE_TEST_DEVICE=cuda:0 XLA_PYTHON_CLIENT_PREALLOCATE=false timeout 180 "$PY" -m pytest -q -p no:cacheprovider \
  python/tests/test_device.py >>"$OUT/tests.log" 2>&1
note "pytest test_device.py on cuda:0: exit $? ($(tail -1 "$OUT/tests.log"))"
fi

# --- benchmarks ---------------------------------------------------------------------------------
DATA=/tmp/chute-gpu-data
mkdir -p "$DATA"
THREADS=16
if [ "$QUICK" = 1 ]; then
  W1=(--samples 32); W3=(--size 128); BATCHES=6; TRIALS=1
else
  W1=(--samples 96); W3=(--size 256); BATCHES=20; TRIALS=2
fi
note "datasets: W1 packed ${W1[*]}, W3 volume ${W3[*]}"
want() { [ -z "$ONLY" ] || [ "$ONLY" = bench ] || [ "$ONLY" = "$1" ]; }
{
  if want packed; then
    [ -d "$DATA/w1" ] || chute make-dataset packed "$DATA/w1" "${W1[@]}" --threads "$JOBS"
  fi
  if want volume; then
    [ -d "$DATA/w3" ] || chute make-dataset volume "$DATA/w3" "${W3[@]}" --threads "$JOBS"
  fi
} >>"$OUT/bench.log" 2>&1 || note "make-dataset failed (see bench.log)"

bench() {  # NAME DATASET extra flags...
  local name=$1 data=$2
  shift 2
  if [ "$(left)" -lt 60 ]; then
    note "bench $name: skipped ($(left) s of the budget left)"
    return
  fi
  note "bench $name: chute bench $data --device cuda:0 --threads $THREADS $*"
  timeout "$(left)" chute bench "$data" --device cuda:0 --threads "$THREADS" --batches "$BATCHES" \
    --warmup 2 --trials "$TRIALS" --compare torch --json "$OUT/$name.json" "$@" \
    >>"$OUT/bench.log" 2>&1
  local rc=$?
  note "bench $name: exit $rc"
  [ -f "$OUT/$name.json" ] && "$PY" - "$OUT/$name.json" >>"$SUMMARY" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
from chute.bench.gpu import render
print(render(r))
EOF
}
want packed && bench w1 "$DATA/w1" --batch-size 16
want volume && bench w3 "$DATA/w3" --batch-size 4 --crop-size 128
note "done in $(($(date +%s) - START)) s"
