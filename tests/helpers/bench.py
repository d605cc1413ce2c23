"""A benchmark script run as a test runs it: ``bench_json`` returns its last stdout line as JSON (the bench's
``--json`` answer), after asserting it exited 0 (its stderr's tail in the message otherwise)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def bench_json(script: str, *args: str, timeout: float) -> Any:
    done = subprocess.run(
        [sys.executable, script, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])
