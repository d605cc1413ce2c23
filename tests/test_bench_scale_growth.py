"""bench/scale_growth.py: how each cost grows with N and with P, from made-up points (contracts 1-4), and
bench/scale_table.py reading several runs' files into one table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench import scale_growth as g
from bench import scale_table


def point(kind: str, n: int, p: int, **costs: Any) -> dict[str, Any]:
    return {
        "kind": kind,
        "brokers": n,
        "partitions": p,
        "create_topics": {"seconds": costs.get("create", 10.0)},
        "controlled_shutdown": {"seconds": costs.get("shutdown", 2.0)},
        "loop_stall_ms": {"create_topics": costs.get("stall", "<100")},
    }


def exps(
    points: list[dict[str, Any]], kind: str, along: str, fixed: int, label: str
) -> list[tuple[int, int, float]]:
    return g.exponents(points)[(kind, along, fixed, label)]


def test_doubling_cost_on_doubling_n_is_linear_and_a_flat_one_is_zero() -> None:
    pts = [point("kraftd", n, 100_000, create=n / 10, shutdown=2.0) for n in (100, 200, 400)]
    create = exps(pts, "kraftd", "N", 100_000, "CreateTopics s")
    assert [(x1, x2) for x1, x2, _ in create] == [(100, 200), (200, 400)]
    assert [b for _, _, b in create] == pytest.approx([1.0, 1.0])
    assert [b for _, _, b in exps(pts, "kraftd", "N", 100_000, "controlled shutdown s")] == pytest.approx(
        [0, 0]
    )
    # no second P value at any N: no series over P
    assert not [k for k in g.exponents(pts) if k[1] == "P"]


def test_square_growth_in_p_is_two_and_fails_the_verdict() -> None:
    pts = [point("kraftd", 100, p, create=(p / 100_000) ** 2) for p in (100_000, 1_000_000)]
    [(x1, x2, b)] = exps(pts, "kraftd", "P", 100, "CreateTopics s")
    assert (x1, x2, b) == (100_000, 1_000_000, pytest.approx(2.0))
    verdict = g.verdict("kraftd", g.exponents(pts))
    assert "NOT linear or better in P" in verdict
    assert "CreateTopics s b=2.00 (N=100, 100k->1M)" in verdict
    assert "controlled shutdown" not in verdict.split("[")[0]  # flat: not named as worse


def test_missing_and_non_numeric_values_are_skipped_the_step_spans_them() -> None:
    pts = [
        point("kraftd", 100, 100_000, stall=200),
        point("kraftd", 300, 100_000, stall="<100"),  # no stall logged: not a number
        point("kraftd", 1000, 100_000, stall=2000),
    ]
    del pts[1]["controlled_shutdown"]
    [(x1, x2, b)] = exps(pts, "kraftd", "N", 100_000, "loop stall ms: create_topics")
    assert (x1, x2, b) == (100, 1000, pytest.approx(1.0))
    assert [(x1, x2) for x1, x2, _ in exps(pts, "kraftd", "N", 100_000, "controlled shutdown s")] == [
        (100, 1000)
    ]
    out = g.growth(pts)
    assert "1.00 (100-1000)" in out  # the span is printed where a value was skipped
    # a row with a single value has no exponent; a row with none is not printed
    one = [point("kraftd", 100, 100_000), point("kraftd", 300, 100_000, stall="<100")]
    one[1]["create_topics"] = {}
    assert exps(one, "kraftd", "N", 100_000, "CreateTopics s") == []
    assert "heartbeat p99 ms" not in g.growth(one)


def test_both_kinds_verdicts_and_where_kraftd_grows_faster() -> None:
    pts = [
        *(
            point("kraftd", 100, p, create=p / 10_000, shutdown=(p / 100_000) ** 1.5)
            for p in (100_000, 1_000_000)
        ),
        *(point("kafka", 100, p, create=p / 5_000, shutdown=2.0) for p in (100_000, 1_000_000)),
    ]
    out = g.growth(pts)
    assert "kafka: linear or better in P (every b <= 1.1)" in out
    assert (
        "kraftd: NOT linear or better in P (b > 1.1): controlled shutdown s b=1.50 (N=100, 100k->1M)" in out
    )
    assert "controlled shutdown s, over P at N=100, 100k->1M: kraftd 1.50, kafka 0.00" in out
    assert "CreateTopics s, over P" not in out  # both linear: kraftd not above Kafka


def test_repeated_points_take_the_median() -> None:
    pts = [point("kraftd", 100, 100_000, create=c) for c in (10.0, 30.0, 11.0)]
    pts.append(point("kraftd", 300, 100_000, create=33.0))
    [(_, _, b)] = exps(pts, "kraftd", "N", 100_000, "CreateTopics s")
    assert b == pytest.approx(1.0)  # median 11 -> 33 over 100 -> 300


def test_several_files_make_one_table(tmp_path: Path) -> None:
    a, b, c = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "c.err"
    a.write_text(json.dumps({"points": [point("kraftd", 100, 100_000, create=5.0)]}))
    b.write_text(json.dumps(point("kraftd", 100, 1_000_000, create=50.0)))
    # a run stopped at its window's end: only its stderr's finished points
    stderr = f"noise\n# kraftd N=300 P=100000: {json.dumps(point('kraftd', 300, 100_000, create=5.0))}\nTraceback\n"
    c.write_text(stderr)
    points = g.load([a, b, c])
    assert sorted((p["brokers"], p["partitions"]) for p in points) == [
        (100, 100_000),
        (100, 1_000_000),
        (300, 100_000),
    ]
    out = scale_table.table(points)
    assert out.index("N=100 P=100000") < out.index("Growth")
    assert "kraftd, over N at P=100k:" in out and "kraftd, over P at N=100:" in out
    assert "kraftd: linear or better in P (every b <= 1.1)" in out
    # one point: no growth section
    assert "Growth" not in scale_table.table(g.load([a]))
