#!/usr/bin/env bash
# Sets up ./.venv if needed, then runs a local 3-controller kraftd quorum on 127.0.0.1 (ports 9093-9095 unless
# --base-port is given): formats temporary directories, starts three processes, waits for a leader, prints
# `kraft-metadata-quorum describe --status`, and keeps running until Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec .venv/bin/python -m tools.local_quorum "$@"
