#!/usr/bin/env bash
# Sets up ./.venv if needed, then runs a local 3-controller kraftd quorum on 127.0.0.1 (ports 9093-9095 unless
# --base-port is given): formats temporary directories with a fresh cluster id, starts three processes, waits
# for a leader, prints `kraft-metadata-quorum describe --status`, and keeps running until Ctrl-C.
#
#   scripts/quorum.sh                     # temporary directory, removed on Ctrl-C
#   scripts/quorum.sh --dir /tmp/q        # keep data and node logs (node-N.log, node-N.pid) in /tmp/q
#   scripts/quorum.sh --base-port 19093   # ports 19093-19095
#
# Exits 1 with one message (and keeps the directory with every node's log) when its nodes do not come up,
# when another process holds a port, or when a node exits while the quorum runs.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec .venv/bin/python -m tools.local_quorum "$@"
