"""kwire.stagetrace (issue 25's stage trace): what tracing a benchmark must not do to it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = """
import gc, os, sys
from kwire import stagetrace
for i in range(5000):
    stagetrace.mark("step.Tick")
assert not os.path.isdir(sys.argv[1]) or not os.listdir(sys.argv[1]), "dumped before exit"
assert not any(gc.is_tracked(m) for m in stagetrace._marks), "marks the GC must scan"
gc.collect(0)
"""


def test_marks_stay_in_memory_untracked_and_collections_are_marked(tmp_path: Path) -> None:
    """Contracts 1a and 3: no file written while marking (a dump is a multi-ms stall on the marking thread),
    nothing for the GC to scan, collections marked, everything written at exit."""
    out = tmp_path / "trace"
    env = {"KRAFTD_STAGE_TRACE": str(out), "PATH": "/usr/bin:/bin"}
    root = str(Path(__file__).resolve().parents[2])
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(out)],
        env={**env, "PYTHONPATH": root},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    (trace,) = out.glob("*.trace")
    stages = [line.split(" ", 1)[1] for line in trace.read_text().splitlines()]
    assert stages.count("step.Tick") == 5000
    assert "gc.start.0" in stages and "gc.end" in stages
