#!/usr/bin/env bash
# The whole test suite: installs what it needs (scripts/bootstrap.sh), then runs
#   1. the C++ unit tests under AddressSanitizer + UBSan (clang), and each fuzzer briefly;
#   2. the C++ tests in a release build, which also lists the tests that start threads
#      (tests/support/thread_census.cc), then every one of those under ThreadSanitizer;
#   3. the MPI tests under mpirun -np 2 and -np 3 (when chute was built with MPI);
#   4. the Python tests (interop with zarr-python 2/3, the Loader, PyTorch and JAX adapters, CLI,
#      the code of the README and the documentation site, the site's strict build, the wheel in a fresh venv, the installed CMake package).
# Warnings are errors in every build here (CHUTE_WERROR); with CI=true a Python test that skips
# without being marked expected_skip fails.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${CHUTE_TEST_JOBS:-$(nproc)}
fuzz_seconds=${CHUTE_FUZZ_SECONDS:-20}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# The builds below (and the wheel and CMake-package builds of the Python tests) share ccache.
export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache
export CHUTE_BUILD_JOBS="$jobs" CMAKE_BUILD_PARALLEL_LEVEL="$jobs"

bash scripts/bootstrap.sh

section() { printf '\n==== %s ====\n' "$*"; }

section "C++ unit tests (AddressSanitizer + UndefinedBehaviorSanitizer)"
cmake --preset asan >/dev/null
cmake --build --preset asan -j "$jobs"
ctest --test-dir build/asan --output-on-failure -j "$jobs" -E '^mpi_'

section "fuzzers (${fuzz_seconds}s each, seed corpus in fuzz/corpus)"
for fuzzer in build/asan/fuzz/*_fuzz; do
  [ -x "$fuzzer" ] || continue
  name=$(basename "$fuzzer")
  corpus=$(mktemp -d)
  cp -r "fuzz/corpus/$name/." "$corpus/" 2>/dev/null || true
  "$fuzzer" -max_total_time="$fuzz_seconds" -rss_limit_mb=2048 -print_final_stats=0 "$corpus" \
    >"build/asan/$name.log" 2>&1 || { tail -n 40 "build/asan/$name.log"; exit 1; }
  echo "$name: $(grep -c . "build/asan/$name.log" >/dev/null; tail -n 1 "build/asan/$name.log")"
  rm -rf "$corpus"
done

section "C++ unit tests (release build), counting which tests start threads"
# With the Python extensions, so that chute_testing (the Python tests' C++ helpers) is built.
cmake --preset release -DCHUTE_WERROR=ON -DCHUTE_BUILD_PYTHON=ON -DPython_EXECUTABLE="$PWD/.venv/bin/python" >/dev/null
cmake --build --preset release -j "$jobs"
census=build/release/threaded-tests.txt
CHUTE_THREAD_CENSUS="$census" build/release/tests/chute_tests --gtest_brief=1
echo "$(grep -c . "$census") tests or suites start threads"

section "every test that starts threads (ThreadSanitizer)"
cmake --preset tsan >/dev/null
cmake --build --preset tsan -j "$jobs" --target chute_tests
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" build/tsan/tests/chute_tests \
  --gtest_filter="$(paste -sd: "$census")" --gtest_brief=1

section "MPI tests"
if ctest --test-dir build/release -N -R '^mpi_' | grep -q 'Total Tests: [1-9]'; then
  ctest --test-dir build/release --output-on-failure -R '^mpi_'
else
  echo "chute was built without MPI: skipped"
fi

section "Python tests"
export CHUTE_CLI="$PWD/.venv/bin/chute"
.venv/bin/python -m pytest -q python/tests
