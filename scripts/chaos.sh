#!/usr/bin/env bash
# A long seeded chaos run on real processes (tests/chaos): scripts/chaos.sh --minutes 60 [--nodes 5] [--seed S]
# Writes chaos-report-<seed>.json/.txt in the current directory unless --report is given.
set -euo pipefail
here=$PWD
cd "$(dirname "$0")/.."
scripts/setup.sh
args=("$@")
if [[ " $* " != *" --report "* ]]; then
  seed=14
  for ((i = 0; i < ${#args[@]}; i++)); do [[ ${args[$i]} == --seed ]] && seed=${args[$((i + 1))]}; done
  args+=(--report "$here/chaos-report-$seed.json")
fi
exec .venv/bin/python -m tests.chaos.run "${args[@]}"
