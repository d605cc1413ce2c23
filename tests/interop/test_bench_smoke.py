"""The start-up and controller benchmarks end to end at tiny sizes, against real Kafka 4.3.1 processes.

Invariants, observed on real processes:
1. kraftd and a Kafka 4.3.1 controller each become the active controller of the generated directory (a copy of
   the same bytes) and of its snapshot copy, with a high watermark at or beyond the generated log end; Kafka's
   heap in use is read through ``jcmd``. The log holds exactly the requested number of records.
2. Through a real broker, every CreateTopics and IncrementalAlterConfigs answer succeeds on both kinds of
   controller quorum, and the broker's metadata lists every topic with its partitions.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.bench import bench_json
from tests.interop.kafka import classpath

pytestmark = [pytest.mark.interop, pytest.mark.slow]


def test_startup_bench_loads_the_same_directory_in_both_kinds(tmp_path: Path) -> None:
    classpath()
    res = bench_json(
        "bench/startup.py",
        *("--records", "3000", "--json", "--no-restart", "--settle", "0.2", "--keep", str(tmp_path)),
        timeout=240,
    )
    assert res["records"] == 3000
    for case in ("log", "snapshot"):
        for kind in ("kraftd", "kafka"):
            got = res[f"{case}_{kind}"]["first"]
            assert got["high_watermark"] >= res["end_offset"], (case, kind, got)
            assert got["rss_mib"] > 0
        assert res[f"{case}_kafka"]["first"]["heap_used_mib"] > 0


def test_controller_bench_creates_and_alters_through_a_real_broker_on_both_kinds() -> None:
    """``bench/controller.py`` at 3 topics: every CreateTopics and IncrementalAlterConfigs answer through the broker
    succeeds on both kinds of controller (the bench exits non-zero otherwise) and every rate is measured."""
    classpath()
    res = bench_json(
        "bench/controller.py", *("--topics", "3", "--batch", "2", "--controllers", "1", "--json"), timeout=240
    )
    for kind in ("kraftd", "kafka"):
        for mode in ("single", "batched"):
            assert res[kind][mode]["create_topics_per_s"] > 0
            assert res[kind][mode]["alter_configs_per_s"] > 0
