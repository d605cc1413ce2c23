#!/usr/bin/env bash
# Prints the interpreter scripts/setup.sh builds ./.venv with (issue 25, docs/PERFORMANCE.md "Issue 25, session 17
# (latency)"):
# 1. $PYTHON when it is set, whatever it is.
# 2. Else the first candidate (python3 on PATH, then /usr/bin/python3; $KRAFTD_PYTHON_CANDIDATES, space-separated,
#    replaces that list) that is Python 3.11 or newer, can build a venv (ensurepip: Debian's python3-venv), and whose
#    executable has libpython linked in rather than loaded as a shared library. On this project's 2-core machine,
#    pyenv's python3 (--enable-shared, no profile-guided build) spent 11% more CPU per commit than Debian's python3
#    on the same code, with a higher commit p50 and p99.
# 3. Else python3.
set -uo pipefail
if [ -n "${PYTHON:-}" ]; then
  echo "$PYTHON"
  exit 0
fi
for cand in ${KRAFTD_PYTHON_CANDIDATES:-python3 /usr/bin/python3}; do
  exe=$("$cand" -c 'import sys, ensurepip, venv; print(sys.executable if sys.version_info >= (3, 11) else "")' 2>/dev/null) || continue
  [ -n "$exe" ] && [ -x "$exe" ] || continue
  libs=$(ldd "$exe" 2>/dev/null) || continue  # no ldd, or not a dynamic executable: cannot tell
  if [[ "$libs" != *libpython* ]]; then
    echo "$exe"
    exit 0
  fi
done
echo python3
