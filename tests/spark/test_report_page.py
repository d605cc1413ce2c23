"""``kraft-analytics report`` as an operator reads it, opened in headless Chromium: a one-controller log (one
epoch, one broker, no lag: plots with no information are not drawn) and a three-controller log with elections
(one failed round), broker fencing, a controlled shutdown, a re-registration and a topic removal. Times read as
UTC ISO, every image loads, the screenshot is not blank, tables are summaries with links to the Parquet."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from click.testing import CliRunner

from generated.broker_registration_change_record import BrokerRegistrationChangeRecord as Change
from generated.register_broker_record import RegisterBrokerRecord
from kraft_spark.cli import main
from kraft_spark.report import iso
from tests.helpers.spark import ORDERS, T0, Log, save, three_controllers
from tests.helpers.spark import report_topic as _topic
from tests.spark.browser import probe, screenshot


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
