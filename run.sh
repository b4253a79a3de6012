#!/usr/bin/env bash
# The main job: build Flotilla and run `flotilla up`: the control plane on the embedded
# SQLite store plus simulated member clusters, joined and Ready.
#   ./run.sh                 # control plane on https://127.0.0.1:6443, 3 members, data in ./.flotilla
#   FLOTILLA_DATA=/tmp/x FLOTILLA_LISTEN=127.0.0.1:7443 ./run.sh --members 5
# Then, in another shell: kubectl --kubeconfig .flotilla/kubeconfig get clusters
set -euo pipefail
cd "$(dirname "$0")"
FL_SETUP_NODE=0 scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C build flotilla
exec build/flotilla up --data-dir "${FLOTILLA_DATA:-.flotilla}" --listen "${FLOTILLA_LISTEN:-127.0.0.1:6443}" "$@"
