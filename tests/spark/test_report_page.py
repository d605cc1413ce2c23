"""``kraft-analytics report`` as an operator reads it, opened in headless Chromium: a one-controller log (one
epoch, one broker, no lag: plots with no information are not drawn) and a three-controller log with elections
(one failed round), broker fencing, a controlled shutdown, a re-registration and a topic removal. Times read as
UTC ISO, every image loads, the screenshot is not blank, tables are summaries with links to the Parquet."""

from __future__ import annotations

import re
import uuid
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from click.testing import CliRunner

from generated.broker_registration_change_record import BrokerRegistrationChangeRecord as Change
from generated.leader_change_message import LeaderChangeMessage, Voter
from generated.no_op_record import NoOpRecord
from generated.partition_record import PartitionRecord
from generated.register_broker_record import RegisterBrokerRecord
from generated.remove_topic_record import RemoveTopicRecord
from generated.topic_record import TopicRecord
from kraft_spark.cli import main
from kraft_spark.report import iso
from kraftd.storage.log import MetadataLog
from kwire.control import ControlRecordType, control_key
from kwire.records import Record, build_batch, build_data_batch
from tests.spark.browser import probe, screenshot

T0 = 1_795_000_000_000  # 2026-11-18T...Z
ORDERS, PAYMENTS = uuid.UUID(int=11), uuid.UUID(int=12)


class Log:
    """A replicated log written in timestamp order: LeaderChange control batches and metadata record batches."""

    def __init__(self) -> None:
        self.events: list[tuple[int, int, list[int] | None, list[Any]]] = []  # (ts, leader, voters, records)

    def leader(self, ts: int, leader: int, voters: list[int]) -> None:
        self.events.append((ts, leader, voters, []))

    def write(self, ts: int, *records: Any) -> None:
        self.events.append((ts, -1, None, list(records)))

    def noops(self, start: int, stop: int, every: int = 500) -> None:
        for ts in range(start, stop, every):
            self.write(ts, NoOpRecord())

    def batches(self, epochs: dict[int, int]) -> list[tuple[int, bytes]]:
        """``epochs``: LeaderChange timestamp → epoch."""
        out, offset, epoch = [], 0, 0
        for ts, leader, voters, records in sorted(self.events, key=lambda e: e[0]):
            if voters is not None:
                epoch = epochs[ts]
                lc = LeaderChangeMessage(0, leader, [Voter(v) for v in voters], [Voter(v) for v in voters])
                rec = Record(0, 0, control_key(ControlRecordType.LEADER_CHANGE), lc.encode(0))
                batch = build_batch(
                    [rec],
                    base_offset=offset,
                    partition_leader_epoch=epoch,
                    base_timestamp=ts,
                    is_control=True,
                )
                offset += 1
            else:
                version = {RegisterBrokerRecord: 2, Change: 1}.get(type(records[0]), 0)
                values = [bytes([1, r.API_KEY, version]) + r.encode(version) for r in records]
                batch = build_data_batch(
                    values, base_offset=offset, partition_leader_epoch=epoch, timestamp=ts
                )
                offset += len(values)
            out.append((ts, batch))
        return out


def save(root: Path, node: int, batches: list[tuple[int, bytes]]) -> None:
    part = root / f"n{node}" / "__cluster_metadata-0"
    part.mkdir(parents=True)
    (root / f"n{node}" / "meta.properties").write_text(f"version=1\nnode.id={node}\ncluster.id=c\n")
    log = MetadataLog(part, 1 << 20, fsync=False)
    for _, b in batches:
        log.append(b)
    log.flush()
    log.close()


def _topic(log: Log, ts: int, name: str, tid: uuid.UUID, partitions: int) -> None:
    parts = [
        PartitionRecord(partition_id=p, topic_id=tid, replicas=[4], isr=[4], leader=4)
        for p in range(partitions)
    ]
    log.write(ts, TopicRecord(name, tid), *parts)


def one_controller(root: Path) -> Path:
    """Controller 1 alone for 40 s: broker 4 registers and is unfenced, topic orders gets 3 partitions."""
    log = Log()
    log.leader(T0, 1, [1])
    log.write(T0 + 2000, RegisterBrokerRecord(broker_id=4, broker_epoch=5, fenced=True))
    log.write(T0 + 2500, Change(broker_id=4, broker_epoch=5, fenced=-1))
    _topic(log, T0 + 5000, "orders", ORDERS, 3)
    log.noops(T0 + 500, T0 + 40_000)
    save(root, 1, log.batches({T0: 1}))
    return root


def three_controllers(root: Path) -> Path:
    """Controllers 1-3, brokers 4-6. Leader 1 (epoch 1) stops writing at +10 s; epoch 2's election fails; 2 leads
    epoch 3 from +12.2 s (first write +12.3 s). Broker 5 is fenced +14 s..+20 s; broker 6 shuts down (controlled)
    at +22 s, is fenced at +23 s, registers again at +30 s and is unfenced at +31 s; payments is removed at +25 s.
    Leader 2 stops at +34 s; 3 leads epoch 4 from +35 s. Node 1's log ends at +10 s, node 3's two batches short."""
    log = Log()
    log.leader(T0, 1, [1, 2, 3])
    for b in (4, 5, 6):
        log.write(T0 + 1000 + b, RegisterBrokerRecord(broker_id=b, broker_epoch=10 + b, fenced=True))
        log.write(T0 + 1500 + b, Change(broker_id=b, broker_epoch=10 + b, fenced=-1))
    _topic(log, T0 + 3000, "orders", ORDERS, 6)
    _topic(log, T0 + 3100, "payments", PAYMENTS, 3)
    log.noops(T0 + 500, T0 + 10_001)
    log.leader(T0 + 12_200, 2, [1, 2, 3])
    log.noops(T0 + 12_300, T0 + 34_001)
    log.write(T0 + 14_000, Change(broker_id=5, broker_epoch=15, fenced=1))
    log.write(T0 + 20_000, Change(broker_id=5, broker_epoch=15, fenced=-1))
    log.write(T0 + 22_000, Change(broker_id=6, broker_epoch=16, in_controlled_shutdown=1))
    log.write(T0 + 23_000, Change(broker_id=6, broker_epoch=16, fenced=1))
    log.write(T0 + 25_000, RemoveTopicRecord(PAYMENTS))
    log.write(T0 + 30_000, RegisterBrokerRecord(broker_id=6, broker_epoch=40, fenced=True))
    log.write(T0 + 31_000, Change(broker_id=6, broker_epoch=40, fenced=-1))
    log.leader(T0 + 35_000, 3, [1, 2, 3])
    log.noops(T0 + 35_200, T0 + 45_001)
    batches = log.batches({T0: 1, T0 + 12_200: 3, T0 + 35_000: 4})
    save(root, 1, [b for b in batches if b[0] <= T0 + 10_000])
    save(root, 2, batches)
    save(root, 3, batches[:-2])
    return root


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.images: list[str] = []
        self.links: list[str] = []
        self.rows = 0
        self.text: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "img":
            self.images.append(a["alt"] or "")
        elif tag == "a":
            self.links.append(a["href"] or "")
        elif tag == "tr":
            self.rows += 1
        elif tag in ("style", "pre"):
            self._skip += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in ("style", "pre"):
            self._skip -= 1

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.text.append(data)


def _report(spark: Any, logs: Path, out: Path) -> _Page:
    result = CliRunner().invoke(main, ["report", str(logs), "--out", str(out)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    page = _Page()
    page.feed((out / "report.html").read_text())
    return page


def _table(out: Path, name: str) -> list[dict[str, Any]]:
    return pq.read_table(out / name).to_pylist()


def _check_in_browser(out: Path, alts: list[str], shot: Path) -> None:
    seen = probe(out / "report.html")
    assert [i[0] for i in seen["images"]] == alts  # type: ignore[attr-defined]
    for alt, loaded, width, height in seen["images"]:  # type: ignore[attr-defined]
        assert loaded and width > 300 and height > 100, f"image {alt} did not load in Chromium"
    screenshot(out / "report.html", shot)
    import matplotlib.image as mpimg
    import numpy as np

    pixels = mpimg.imread(shot)[..., :3]
    assert pixels.shape[:2] == (3000, 1200)
    inked = (pixels.min(axis=2) < 0.9).mean()  # anything darker than near-white: text, lines, bars
    colour = (pixels.max(axis=2) - pixels.min(axis=2) > 0.25).mean()  # saturated pixels: the plots
    assert inked > 0.02 and colour > 0.005, f"screenshot looks blank: inked {inked:.4f}, colour {colour:.4f}"
    assert np.isfinite(pixels).all()


def _no_raw_epoch_ms(page: _Page) -> None:
    visible = " ".join(page.text)
    assert not re.search(r"\b1\d{12}\b", visible), "a raw epoch-milliseconds value is shown"
    assert iso(T0) in visible


def test_one_controller_report(spark: Any, tmp_path: Path) -> None:
    out = tmp_path / "out"
    page = _report(spark, one_controller(tmp_path / "logs"), out)
    assert _table(out, "failovers") == [] and len(_table(out, "commit_rate")) == 40
    assert [(r["broker_id"], r["event"]) for r in _table(out, "broker_events")] == [
        (4, "registered"),
        (4, "unfenced"),
    ]
    assert [(r["topics"], r["partitions"]) for r in _table(out, "topic_counts")] == [(1, 3)]
    # Leader lane, brokers, topics, commit rate; no failover bars (no election) and no lag bars (one node).
    assert page.images == ["leader timeline", "broker timeline", "topic counts", "commit rate"]
    visible = " ".join(page.text)
    assert "no election after the first" in visible and "no lag to compare" in visible
    _no_raw_epoch_ms(page)
    assert page.rows < 60, f"{page.rows} table rows: tables are not summarized"
    assert "commit_rate/part-00000.parquet" in page.links
    assert all((out / link).exists() for link in page.links)
    _check_in_browser(out, page.images, tmp_path / "one.png")


def test_three_controller_report(spark: Any, tmp_path: Path) -> None:
    out = tmp_path / "out"
    page = _report(spark, three_controllers(tmp_path / "logs"), out)
    fo = _table(out, "failovers")
    assert [
        (
            r["epoch"],
            r["prev_leader"],
            r["leader_id"],
            r["election_rounds"],
            r["failover_ms"],
            r["activation_ms"],
        )
        for r in fo
    ] == [(3, 1, 2, 2, 2200, 100), (4, 2, 3, 1, 1200, 200)]
    events = [(r["broker_id"], r["event"]) for r in _table(out, "broker_events") if r["broker_id"] == 6]
    assert events == [
        (6, "registered"),
        (6, "unfenced"),
        (6, "controlled_shutdown"),
        (6, "fenced"),
        (6, "registered"),
        (6, "unfenced"),
    ]
    counts = [(r["topics"], r["partitions"]) for r in _table(out, "topic_counts")]
    assert counts == [(2, 9), (1, 6)]  # orders and payments created in the same second
    assert {r["node"]: r["lag"] for r in _table(out, "node_lag")} == {1: 73, 2: 0, 3: 2}
    alts = ["leader timeline", "failovers", "broker timeline", "topic counts", "commit rate", "node lag"]
    assert page.images == alts
    visible = " ".join(page.text)
    assert (
        "epochs with no winner (failed elections)" in visible
        and f"at epoch 3 ({iso(T0 + 12_200)})" in visible
    )
    _no_raw_epoch_ms(page)
    assert page.rows < 120, f"{page.rows} table rows: tables are not summarized"
    assert all((out / link).exists() for link in page.links)
    _check_in_browser(out, alts, tmp_path / "three.png")
