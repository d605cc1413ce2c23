"""kraft-analytics over a two-node log with a failover, plus a simulator sweep with a planted bug: the Parquet
tables hold the expected facts and the HTML report renders (parses, its images decode, Chromium screenshots it)."""

from __future__ import annotations

import base64
import io
import uuid
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from click.testing import CliRunner

from generated.leader_change_message import LeaderChangeMessage, Voter
from generated.voters_record import Endpoint, KRaftVersionFeature, VotersRecord
from generated.voters_record import Voter as VoterEntry
from kraft_spark.cli import main
from kraftd.core.config import BugFlags
from kraftd.sim.runner import run_seed
from kraftd.storage.log import MetadataLog
from kwire.control import ControlRecordType, control_key
from kwire.records import Record, build_batch, build_data_batch
from tests.helpers.spark import NO_OP
from tests.helpers.spark import frame as _frame
from tests.spark.browser import probe, screenshot

META = "__cluster_metadata-0"
TOPIC = _frame(2, 0, bytes([len("orders") + 1]) + b"orders" + uuid.UUID(int=7).bytes + b"\x00")
FENCE = _frame(7, 0, (3).to_bytes(4, "big") + (9).to_bytes(8, "big") + b"\x00")


def _control(kind: ControlRecordType, msg: Any, offset: int, epoch: int, ts: int) -> bytes:
    rec = Record(0, 0, control_key(kind), msg.encode(0))
    return build_batch(
        [rec], base_offset=offset, partition_leader_epoch=epoch, base_timestamp=ts, is_control=True
    )


def make_two_node_logs(root: Path) -> Path:
    """Epoch 1 led by node 1 (records at t=1000..1900 ms), epoch 2 by node 2 from t=2500; node 2 lags 3."""
    voters = VotersRecord(
        0,
        [
            VoterEntry(
                i,
                uuid.UUID(int=i),
                [Endpoint("CONTROLLER", "127.0.0.1", 9000 + i)],
                KRaftVersionFeature(0, 1),
            )
            for i in (1, 2)
        ],
    )
    batches = [
        _control(
            ControlRecordType.LEADER_CHANGE,
            LeaderChangeMessage(0, 1, [Voter(1), Voter(2)], [Voter(1), Voter(2)]),
            0,
            1,
            1000,
        ),
        _control(ControlRecordType.KRAFT_VOTERS, voters, 1, 1, 1000),
        build_data_batch([TOPIC], base_offset=2, partition_leader_epoch=1, timestamp=1100),
    ]
    offset = 3
    for i in range(9):
        batches.append(
            build_data_batch([NO_OP], base_offset=offset, partition_leader_epoch=1, timestamp=1200 + i * 87)
        )
        offset += 1
    batches.append(build_data_batch([NO_OP], base_offset=offset, partition_leader_epoch=1, timestamp=1900))
    offset += 1
    batches.append(
        _control(
            ControlRecordType.LEADER_CHANGE,
            LeaderChangeMessage(0, 2, [Voter(1), Voter(2)], [Voter(2), Voter(1)]),
            offset,
            2,
            2500,
        )
    )
    offset += 1
    batches.append(build_data_batch([FENCE], base_offset=offset, partition_leader_epoch=2, timestamp=2600))
    offset += 1
    for i in range(3):
        batches.append(
            build_data_batch([NO_OP], base_offset=offset + i, partition_leader_epoch=2, timestamp=2700 + i)
        )
    for node, count in ((1, len(batches)), (2, len(batches) - 3)):
        part = root / f"n{node}" / META
        part.mkdir(parents=True)
        (root / f"n{node}" / "meta.properties").write_text(f"version=1\nnode.id={node}\ncluster.id=c\n")
        log = MetadataLog(part, 1 << 20, fsync=False)
        for b in batches[:count]:
            log.append(b)
        log.flush()
        log.close()
    return root


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.images: list[str] = []
        self.headings: list[str] = []
        self._in_h2 = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "img":
            self.images.append(dict(attrs)["src"] or "")
        self._in_h2 = tag == "h2"

    def handle_data(self, data: str) -> None:
        if self._in_h2:
            self.headings.append(data)
            self._in_h2 = False


def _table(out: Path, name: str) -> list[dict[str, Any]]:
    return pq.read_table(out / name).to_pylist()


def test_report_jobs_and_rendering(spark: Any, tmp_path: Path) -> None:
    logs = make_two_node_logs(tmp_path / "logs")
    out = tmp_path / "out"
    args = ["report", str(logs), "--out", str(out), "--master", "local[2]", "--seeds", "0-11"]
    # zombie_leader catches a leader without check-quorum; failover_kill is a healthy control.
    args += ["--scenario", "zombie_leader", "--scenario", "failover_kill", "--bug", "no_check_quorum"]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output

    timeline = sorted(_table(out, "leader_timeline"), key=lambda r: r["epoch"])
    assert [(r["epoch"], r["leader_id"], r["offset"]) for r in timeline] == [(1, 1, 0), (2, 2, 13)]
    assert [(r["epoch"], r["prev_leader"], r["failover_ms"]) for r in _table(out, "failovers")] == [
        (2, 1, 600)
    ]
    assert {r["node"]: r["lag"] for r in _table(out, "node_lag")} == {1: 0, 2: 3}
    assert [r["voter_ids"] for r in _table(out, "voter_history")] == [[1, 2]]
    assert [(r["offset"], r["type"]) for r in _table(out, "topic_history")] == [(2, "TopicRecord")]
    assert [(r["offset"], r["type"]) for r in _table(out, "broker_history")] == [(14, "FenceBrokerRecord")]
    rate = _table(out, "commit_rate")
    assert sum(r["records"] for r in rate) == 18 and {r["second"] for r in rate} == {1, 2}

    sweep = _table(out, "sweep")
    assert sorted(r["seed"] for r in sweep) == list(range(12))
    assert {r["scenario"] for r in sweep} == {"zombie_leader", "failover_kill"}
    bad = [r for r in sweep if not r["ok"]]
    assert bad and {r["scenario"] for r in bad} == {"zombie_leader"}, "the planted bug is caught"
    for r in bad:  # each violation replays: same scenario and seed fail again
        assert (
            r["replay"]
            == f"python -m kraftd.sim --scenario {r['scenario']} --seed {r['seed']} --bug no_check_quorum"
        )
        assert not run_seed(r["scenario"], r["seed"], BugFlags(no_check_quorum=True)).ok
        assert r["trace"]

    page = (out / "report.html").read_text()
    parser = _Page()
    parser.feed(page)
    assert "Leader timeline" in parser.headings and "Simulation violations" in parser.headings
    assert len(parser.images) == 7 and all(src.startswith("data:image/png;base64,") for src in parser.images)
    import matplotlib.image as mpimg

    for src in parser.images:
        pixels = mpimg.imread(io.BytesIO(base64.b64decode(src.split(",", 1)[1])), format="png")
        assert pixels.shape[0] > 100 and pixels.shape[1] > 100 and pixels.std() > 0
    assert 'src="http' not in page and 'href="http' not in page  # self-contained: links are to its Parquet
    seen = probe(out / "report.html")
    assert len(seen["images"]) == 7 and all(i[1] for i in seen["images"])  # type: ignore[arg-type,attr-defined]
    screenshot(out / "report.html", tmp_path / "shot.png")
    pixels = mpimg.imread(tmp_path / "shot.png")
    assert pixels.shape[:2] == (3000, 1200) and pixels.std() > 0.01
