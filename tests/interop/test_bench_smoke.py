"""``bench/startup.py`` end to end at a tiny size: the generated directory loads in both kinds of controller.

Invariants, observed on real processes:
1. kraftd and a Kafka 4.3.1 controller each become the active controller of the generated directory (a copy of
   the same bytes) and of its snapshot copy, with a high watermark at or
   beyond the generated log end; Kafka's heap in use is read through ``jcmd``.
2. The log holds exactly the requested number of records.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.interop.kafka import classpath

pytestmark = [pytest.mark.interop, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]


def test_startup_bench_loads_the_same_directory_in_both_kinds(tmp_path: Path) -> None:
    classpath()
    done = subprocess.run(
        [
            str(ROOT / ".venv/bin/python"),
            "bench/startup.py",
            "--records",
            "3000",
            "--json",
            "--no-restart",
            "--settle",
            "0.2",
            "--keep",
            str(tmp_path),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    res = json.loads(done.stdout.strip().splitlines()[-1])
    assert res["records"] == 3000
    for case in ("log", "snapshot"):
        for kind in ("kraftd", "kafka"):
            got = res[f"{case}_{kind}"]["first"]
            assert got["high_watermark"] >= res["end_offset"], (case, kind, got)
            assert got["rss_mib"] > 0
        assert res[f"{case}_kafka"]["first"]["heap_used_mib"] > 0
