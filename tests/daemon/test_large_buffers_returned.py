"""tools.heap contract 1 (``kraftd start``, ``kraft-swarm`` and bench/scale.py call it): it fixes glibc's mmap threshold, so a freed buffer of 1 MiB or more goes
back to the system instead of staying in the heap (issue 24, 1,000 x 1M: a leader answering 1,000 brokers catching
up grew from 1.3 to 2.3 GB in 300 s with glibc's dynamic threshold, docs/SWARM.md session 16). Each case runs in a
fresh interpreter: the allocator's state is per process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROBE = """
import sys
from tools.heap import unpooled_large_buffers
fixed = unpooled_large_buffers() if sys.argv[1] == "1" else False
def rss():
    return int(open("/proc/self/statm").read().split()[1]) * 4096
x = b"\\x01" * (8 << 20)  # an 8 MiB answer, mmapped and freed: glibc raises its threshold to 8 MiB
del x
base = rss()
y = b"\\x01" * ((8 << 20) - 4096)  # the next one, just below it
del y
print(int(fixed), rss() - base)
"""


def _probe(fix: str, env_threshold: str | None = None) -> tuple[int, int]:
    env = {"PATH": "/usr/bin:/bin"} | ({"KRAFTD_MMAP_THRESHOLD": env_threshold} if env_threshold else {})
    out = subprocess.run(
        [sys.executable, "-c", PROBE, fix], capture_output=True, text=True, check=True, env=env, cwd=ROOT
    )
    fixed, grown = out.stdout.split()
    return int(fixed), int(grown)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_a_freed_large_buffer_goes_back_to_the_system() -> None:
    fixed, grown = _probe("1")
    assert fixed == 1
    assert grown < 1 << 20, grown  # the 8 MiB buffer was returned
    _, kept = _probe("0")  # glibc's dynamic threshold (before): the freed buffer stays in the heap
    assert kept >= 7 << 20, kept
    fixed, kept = _probe("1", "0")  # KRAFTD_MMAP_THRESHOLD=0 leaves glibc's default
    assert fixed == 0 and kept >= 7 << 20, kept
