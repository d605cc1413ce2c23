#!/usr/bin/env bash
# Creates (or reuses) ./.venv and installs kraftd with its test extras. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.kraftd-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null
  .venv/bin/python -m pip install -q -e '.[test]'
  touch "$stamp"
fi
# The real Apache Kafka jars the interop tests run against (Maven Central; seconds when already fetched).
scripts/fetch_kafka.sh
