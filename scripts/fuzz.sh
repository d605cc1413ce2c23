#!/usr/bin/env bash
# The long fuzz run over every target (tests/fuzz/targets.py): scripts/fuzz.sh --minutes N [--target NAME ...]
# atheris (coverage-guided) when installed, else a seeded mutator. Crashes land in tests/fuzz/crashes/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec .venv/bin/python -m tests.fuzz.run "$@"
