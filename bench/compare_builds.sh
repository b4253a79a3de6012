#!/usr/bin/env bash
# Two builds of Flotilla measured side by side, interleaved, for a change that must not move
# performance (a refactoring): the same benchmarks run with the old build's binaries and the
# new build's, alternately, ROUNDS times, so that both see the same spells of a shared machine.
#   bench/compare_builds.sh OLD_BUILD_DIR NEW_BUILD_DIR [ROUNDS]     # default 2 rounds, ~8 min
# Each build directory must hold flotilla and bench/{propagation,api_throughput,sched}, as
# `ninja -C DIR` makes them (make the old one from a checkout of the older commit).
# Prints every benchmark's own output under a header naming the build; compare the figures
# of the same round.
set -uo pipefail
OLD=${1:?old build dir}
NEW=${2:?new build dir}
ROUNDS=${3:-2}
failed=0

run() { # label build-dir benchmark args...
    local label=$1 dir=$2 b=$3
    shift 3
    echo
    echo "### [$label] $b $*"
    local t0=$SECONDS
    case $b in
    sched) timeout 600 "$dir/bench/sched" "$@" ;;
    *) timeout 600 "$dir/bench/$b" "$@" --flotilla "$dir/flotilla" ;;
    esac
    local rc=$?
    echo "### [$label] exit $rc after $((SECONDS - t0)) s"
    [ $rc -eq 0 ] || failed=1
}

echo "# compare_builds $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# old: $OLD  new: $NEW  rounds: $ROUNDS"
for r in $(seq 1 "$ROUNDS"); do
    # alternate which build goes first, so neither always runs on a warmer machine
    if [ $((r % 2)) -eq 1 ]; then order="old new"; else order="new old"; fi
    for bench in "propagation --phases 1,3" "api_throughput --clients 16 --objects 2000" "sched"; do
        for which in $order; do
            dir=$OLD; [ "$which" = new ] && dir=$NEW
            # shellcheck disable=SC2086
            run "$which r$r" "$dir" $bench
        done
    done
done
exit $failed
