"""``kraftd perf`` writes valid metadata records: with a kraftd leader and a real Kafka controller following,
the NoOpRecords it appends replicate into Kafka's log byte for byte, and Kafka's controller (which decodes
every committed record with its MetadataRecordSerde and replays it) logs no parse failure. Before, perf wrote
raw bytes that Kafka refuses ('MetadataParseException ... unknown frame version')."""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import pytest

from tests.daemon.cluster import KRAFTD
from tests.helpers.interop import assert_logs_agree, lead_with
from tests.interop.kafka import MixedQuorum, classpath, protocol_complaints

pytestmark = [pytest.mark.interop, pytest.mark.slow, pytest.mark.timeout(300)]


def test_perf_records_replicate_to_a_kafka_follower(tmp_path: Path) -> None:
    classpath("4.3.1")
    with MixedQuorum(tmp_path, ("kafka", "kraftd", "kraftd"), bootstrap="static") as q:
        q.start_all()
        # A Kafka leader writes the bootstrap records (metadata.version) its controllers need before they can
        # replay anything; kraftd does not write them yet.
        kafka_leader = q.node(lead_with(q, "kafka"))
        deadline = time.monotonic() + 60
        while "setting metadata.version" not in kafka_leader.log_text():  # activation appended them ...
            assert time.monotonic() < deadline, kafka_leader.tail()
            time.sleep(0.2)
        assert_logs_agree(q)  # ... and every voter holds them up to the high watermark (committed)
        leader = lead_with(q, "kraftd")
        before = q.wait_leader().high_watermark
        port = q.node(leader).port
        out = subprocess.run(
            [
                KRAFTD,
                "perf",
                "--bootstrap-controller",
                f"127.0.0.1:{port}",
                "--records",
                "2000",
                "--batch",
                "20",
            ]
            + ["--json"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert out.returncode == 0, out.stderr
        stats = json.loads(out.stdout.strip().splitlines()[-1])
        assert stats["records"] == 2000
        assert assert_logs_agree(q) >= before + 2000  # the Kafka follower holds the same bytes
        kafka = next(n for n in q.nodes if n.kind == "kafka")
        text = kafka.log_text()
        # Kafka's controller replays every committed record (MetadataLoader#handleCommit); a record it cannot
        # decode is a fatal fault. (Its other complaints, e.g. ControllerRegistration to a kraftd leader that
        # does not serve that RPC yet, are not about the records.)
        bad = [
            c
            for c in protocol_complaints(text)
            if re.search(r"MetadataParse|frame version|handleCommit|replay", c)
        ]
        assert not bad, bad
        assert "MetadataParseException" not in text and "unknown frame version" not in text
        assert "Encountered fatal fault" not in text
