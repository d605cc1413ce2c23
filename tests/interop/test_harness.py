"""The harness's own promises: fetching Kafka is idempotent and cheap the second time (scripts/fetch_kafka.sh)."""

from __future__ import annotations

import subprocess
import time

import pytest

from tests.interop.kafka import ROOT, classpath

pytestmark = [pytest.mark.interop]


def test_fetch_kafka_twice_is_quick_and_succeeds() -> None:
    classpath()  # fetched already (scripts/setup.sh), or skip/fail as contract 1 says
    t0 = time.monotonic()
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "fetch_kafka.sh")], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "resolving" not in done.stderr, "an already fetched version was resolved again"
    assert time.monotonic() - t0 < 10
