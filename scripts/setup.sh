#!/usr/bin/env bash
# Creates (or reuses) ./.venv and installs kraftd with its test extras. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
# $PYTHON, else an interpreter with libpython linked in when the machine has one (scripts/pick_python.sh)
PY=$(scripts/pick_python.sh)
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.kraftd-installed
# (re)install when the project metadata, the build script or the compiled codec's source changed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ setup.py -nt "$stamp" ] \
  || [ kwire/_fastcodec.pyx -nt "$stamp" ] || [ kwire/_fastrecords.pyx -nt "$stamp" ] \
  || [ kraftd/shell/raft/_syncloop.pyx -nt "$stamp" ]; then
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null
  .venv/bin/python -m pip install -q -e '.[test,spark]'
  touch "$stamp"
fi
# The compiled codec (kwire/_fastcodec.pyx, Cython) is optional: without a C compiler the build skips it.
if ! .venv/bin/python -c "import kwire._fastcodec, kwire._fastrecords" >/dev/null 2>&1; then
  echo "setup: compiled codec not built (no C compiler or Cython?); the pure-Python codec will be used" >&2
fi
# Headless Chromium for the Spark report's screenshot test (tests/spark/test_analytics.py): Debian's package,
# installed only where apt-get is usable (root); the test fails under CI=true without it.
if ! command -v chromium >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  { apt-get update -qq && apt-get install -y -qq chromium; } >/dev/null 2>&1 \
    || echo "setup: could not install chromium (the report screenshot test will skip outside CI)" >&2
fi
# tcpdump for the capture-decoding interop test (tests/interop/test_conformance.py): only when it is missing and
# only as root on Debian/Ubuntu; otherwise that one test skips (the proxy-recorded capture test needs nothing).
if ! command -v tcpdump >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  { apt-get install -y -q tcpdump || { apt-get update -q && apt-get install -y -q tcpdump; }; } >/dev/null 2>&1 \
    || echo "setup: could not install tcpdump; the tcpdump capture test will skip" >&2
fi
# libfaketime for the chaos harness's wall-clock jumps (tests/chaos/test_clock_jumps.py): only as root on Debian;
# otherwise that test skips outside CI (under CI=true it fails).
if ! ls /usr/lib/*/faketime/libfaketimeMT.so.1 >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  { apt-get install -y -q faketime || { apt-get update -q && apt-get install -y -q faketime; }; } >/dev/null 2>&1 \
    || echo "setup: could not install faketime; the wall-clock jump test will skip" >&2
fi
# Prometheus and promtool for the metrics tests (tests/ops, tests/interop/test_prometheus.py): Debian's package, only
# as root; the tests run the binary with their own config (the package's service is not used); under CI=true they
# fail without it.
if ! command -v prometheus >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  { DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends prometheus \
    || { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends prometheus; }; } \
    >/dev/null 2>&1 || echo "setup: could not install prometheus; the Prometheus tests will skip outside CI" >&2
fi
# The real Apache Kafka jars the interop tests run against (Maven Central; seconds when already fetched).
scripts/fetch_kafka.sh
