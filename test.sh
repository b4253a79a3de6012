#!/usr/bin/env bash
# Every test: unit tests (cmocka/ctest) and end-to-end tests (kubectl, the official Python
# and JavaScript clients, curl) against a build with ASan+UBSan, a release build with
# -Werror, and a replay of every fuzz target's corpus. Installs what it needs first.
#   ./test.sh            # everything
#   ./test.sh unit|e2e|fuzz
set -euo pipefail
cd "$(dirname "$0")"
what=${1:-all}
scripts/setup.sh
export PATH="$PWD/.tools/bin:$PATH"

step() { printf '\n==> %s\n' "$*"; }

# Cheap, so first: includes follow docs/internals/architecture.md's arrows, files and
# functions stay within their limits, and the check itself still catches a planted mistake.
step "architecture check"
/usr/bin/python3 scripts/check_arch.py
tests/arch/test_check_arch.sh

# Release build (the binary benchmarks and run.sh use) must compile cleanly too.
step "release build"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C build

step "sanitizer build (ASan+UBSan)"
CC=clang cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DFL_SANITIZE=ON >/dev/null
ninja -C build-asan
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

if [ "$what" = all ] || [ "$what" = unit ]; then
  step "unit tests (ctest, ASan+UBSan)"
  ctest --test-dir build-asan --output-on-failure -j2
fi

if [ "$what" = all ] || [ "$what" = e2e ]; then
  # two workers, each taking whole files (a module's fixtures stay in one worker): most of a
  # test's time is waiting on a server, so two halve the run on two cores
  step "end-to-end tests: kubectl, Python client, curl (pytest, server under ASan+UBSan)"
  FLOTILLA_BIN="$PWD/build-asan/flotilla" /usr/bin/python3 -m pytest -q -p no:cacheprovider -n 2 --dist loadfile \
    tests/e2e
  # the same API, watch, propagation and suspension tests with the store in a 3-member etcd
  # cluster the fixtures start (docs/ha.md); test_etcd.py and test_ha.py, above, cover what
  # only etcd and replicas do
  # (the release build: the etcd code runs under the sanitizers in the unit tests and in
  # test_etcd*.py and test_ha.py above; this keeps the whole run under 30 minutes)
  # test_work_delivery: restarts resume from the reconciled revision and the member watches'
  # notes, which on etcd must see past revisions other prefixes took
  step "end-to-end tests on etcd: API semantics, Python client, propagation, suspension, delivery"
  FLOTILLA_E2E_STORE=etcd FLOTILLA_BIN="$PWD/build/flotilla" /usr/bin/python3 -m pytest -q -p no:cacheprovider \
    -n 2 --dist loadfile tests/e2e/test_api_semantics.py tests/e2e/test_python_client.py \
    tests/e2e/test_propagation.py tests/e2e/test_suspension.py tests/e2e/test_work_delivery.py
  step "end-to-end tests: @kubernetes/client-node (node --test)"
  FLOTILLA_BIN="$PWD/build-asan/flotilla" node --test tests/e2e/node/
  step "end-to-end tests: the dashboard in headless chromium (node --test; screenshots in build-artifacts/ui)"
  FLOTILLA_BIN="$PWD/build-asan/flotilla" node --test tests/e2e/ui/
fi

if [ "$what" = all ] || [ "$what" = fuzz ]; then
  step "fuzz corpus replay (libFuzzer, ASan+UBSan)"
  CC=clang cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=Debug -DFL_FUZZ=ON >/dev/null
  # only the fuzz targets (and the library they link): the server, the unit tests and the
  # benchmarks are built above already
  ninja -C build-fuzz $(for f in tests/fuzz/fuzz_*.c; do basename "$f" .c; done)
  n=0
  # a leak inside libfyaml itself, named in the file, is not ours to fail on; the slow
  # unwinder sees through the library's frames, so the name can be matched
  export LSAN_OPTIONS="suppressions=$PWD/tests/fuzz/lsan.supp:print_suppressions=0"
  export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=0"
  for f in build-fuzz/fuzz_*; do
    name=$(basename "$f"); dir="tests/fuzz/corpus/${name#fuzz_}"
    [ -d "$dir" ] || { echo "missing corpus $dir for $name"; exit 1; }
    "$f" -runs=0 "$dir" >/dev/null 2>&1 || { echo "FAIL $name on its corpus"; "$f" -runs=0 "$dir"; exit 1; }
    # a short fresh run too, so new code paths get exercised on every CI run
    "$f" -max_total_time=6 -rss_limit_mb=2048 "$(mktemp -d)" "$dir" >/dev/null 2>&1 \
      || { echo "FAIL $name (new crash while fuzzing)"; exit 1; }
    n=$((n+1))
  done
  echo "fuzz: $n passed, 0 failed"
fi
