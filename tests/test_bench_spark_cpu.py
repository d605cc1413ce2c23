"""bench/spark.py's CPU accounting: a Python worker that exits during a pass keeps its CPU in the pass."""

from __future__ import annotations

import subprocess
import sys

from bench.spark import _cpu

BURN = "import time\nwhile time.process_time() < 0.3:\n    pass\n"


def test_a_reaped_childs_cpu_stays_counted_in_its_parent() -> None:
    """pyspark's daemon forks the workers and reaps those that exit: their CPU is then the daemon's cutime."""
    parent = (
        "import subprocess, sys, time\n"
        f"subprocess.run([sys.executable, '-c', {BURN!r}])\n"
        "print('reaped', flush=True)\n"
        "time.sleep(60)\n"
    )
    p = subprocess.Popen([sys.executable, "-c", parent], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout is not None and p.stdout.readline().strip() == "reaped"
        assert _cpu(p.pid, reaped=True) - _cpu(p.pid) >= 0.25
    finally:
        p.kill()
        p.wait()
