#!/usr/bin/env bash
# test_check_arch.sh - scripts/check_arch.py passes on the tree as it is, and fails, naming
# the file and the arrow or the limit, on a copy of src/ with a forbidden include, an
# over-long function and an over-long file planted in it.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
check=("/usr/bin/python3" "$root/scripts/check_arch.py" --doc "$root/docs/internals/architecture.md")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# the unchanged tree passes
"${check[@]}" --src "$root/src" >"$tmp/out" 2>&1 || { cat "$tmp/out"; fail "the check fails on the unchanged tree"; }

# copy, then plant one problem at a time, each on a fresh copy
plant() { rm -rf "$tmp/src"; cp -r "$root/src" "$tmp/src"; }
expect_fail() { # what: words the output must contain
    if "${check[@]}" --src "$tmp/src" >"$tmp/out" 2>&1; then
        cat "$tmp/out"; fail "the check passed with $1 planted"
    fi
    grep -qF -- "$2" "$tmp/out" || { cat "$tmp/out"; fail "the output does not name $2"; }
}

# core may include nothing of ours
plant
printf '#include "api/api.h"\n' >>"$tmp/src/core/base64.c"
n=$(wc -l <"$tmp/src/core/base64.c")
expect_fail "a core -> api include" "src/core/base64.c:$n: core -> api is not allowed"

# controllers may not include the store (they go through the client)
plant
sed -i '0,/^#include "/s//#include "store\/store.h"\n#include "/' "$tmp/src/controllers/scheduler.c"
expect_fail "a controllers -> store include" "src/controllers/scheduler.c"
grep -qF "controllers -> store is not allowed" "$tmp/out" || fail "the arrow controllers -> store is not named"

# a function over 150 lines
plant
{ echo; echo "int fl_base64_too_long(void)"; echo "{"; echo "    int x = 0;"
  for _ in $(seq 160); do echo "    x++;"; done; echo "    return x;"; echo "}"; } >>"$tmp/src/core/base64.c"
expect_fail "a 165-line function" "src/core/base64.c"
grep -qF "function fl_base64_too_long is" "$tmp/out" || fail "the long function is not named"

# a hand-written file over 1,500 lines (a generated table of the same size is exempt)
plant
for _ in $(seq 1600); do echo "/* padding */"; done >>"$tmp/src/core/err.c"
for _ in $(seq 1600); do echo "/* padding */"; done >>"$tmp/src/api/kinds_schema.c"
expect_fail "a 1,600-line file" "src/core/err.c"
if grep -qF "kinds_schema.c" "$tmp/out"; then cat "$tmp/out"; fail "a generated table was held to the file limit"; fi

echo "test_check_arch: ok"
