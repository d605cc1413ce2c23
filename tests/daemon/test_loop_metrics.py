"""The request metrics and ``kraftd_reads_total`` are written on the loop without a lock (issue 25:
kraftd.shell.observe.loopmetrics): a linearizable read on the fast path updates three of them, which with
prometheus_client's mutex-per-update children cost ~3 us of its ~15 us of server CPU. Counted, not timed."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from kraftd.shell.observe.loopmetrics import LoopCounters
from kraftd.shell.observe.metrics import NodeMetrics

BUCKETS = (0.0005, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


def python_calls(fn: Callable[[], None]) -> list[str]:
    """The Python functions ``fn`` calls (itself not counted), by name."""
    seen: list[str] = []

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            seen.append(frame.f_code.co_qualname)

    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return seen[1:]


def test_a_fast_read_updates_its_metrics_with_one_call_each_and_no_lock() -> None:
    metrics = NodeMetrics()
    count, latency = metrics.children("DescribeConfigs")
    served = LoopCounters("kraftd_reads", "reads", "consistency", metrics.registry).labels("linearizable")

    def one_read() -> None:  # what ReadBarriers.describe_now's answer does per read
        count.inc()
        latency.observe(0.0003)
        served.inc()

    calls = python_calls(one_read)
    # Before: Counter.inc -> _raise_if_not_observable -> MutexValue.inc (a lock) and Histogram.observe -> two
    # MutexValue.inc, 13 calls in all (4 mutexes taken).
    assert calls == ["LoopCounter.inc", "LoopHistogram.observe", "LoopCounter.inc"], calls


def test_the_exposition_is_prometheus_clients() -> None:
    """Contract 2: the same lines as prometheus_client's Counter and Histogram (without ``_created``)."""
    ours = NodeMetrics()
    ref = CollectorRegistry()
    c = Counter(
        "kafka_network_request_metrics_requests", "Requests received, by api", ["request"], registry=ref
    )
    h = Histogram(
        "kafka_network_request_metrics_total_time_seconds",
        "Time from receiving a request to having its response, by api",
        ["request"],
        registry=ref,
        buckets=BUCKETS,
    )
    for api, samples in (("Fetch", [0.0003, 0.0005, 0.00051, 20.0]), ("DescribeConfigs", [0.001, 10.0, 0.0])):
        mine = ours.children(api)
        for x in samples:
            mine[0].inc()
            mine[1].observe(x)
            c.labels(api).inc()
            h.labels(api).observe(x)

    def lines(registry: CollectorRegistry) -> set[str]:
        text = generate_latest(registry).decode()
        return {ln for ln in text.splitlines() if "request_metrics" in ln and "_created" not in ln}

    assert lines(ours.registry) == lines(ref)
    assert (
        ours.registry.get_sample_value(
            "kafka_network_request_metrics_total_time_seconds_bucket", {"request": "Fetch", "le": "0.0005"}
        )
        == 2
    )
