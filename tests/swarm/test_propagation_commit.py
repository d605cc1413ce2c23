"""tools.swarm.swarm contract 3a: propagation measured from the commit on the leader, as the swarm first sees it (the
CreateTopics answer or a Fetch answer's high watermark), beside the delay from sending CreateTopics."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from generated.create_topics_response import CreatableTopicResult, CreateTopicsResponse
from tools.swarm.lifecycle import SwarmConfig
from tools.swarm.swarm import Swarm


def _swarm(n: int) -> Swarm:
    return Swarm(SwarmConfig("c", {1: ("127.0.0.1", 1)}), n)


def test_a_fetch_answer_covering_the_topic_marks_the_commit_before_the_create_answer() -> None:
    swarm = _swarm(2)
    a, b = swarm.brokers.values()
    w = swarm.watch("t")
    swarm.replay.topic_offset["t"] = 5
    a.fetch_end, a.hwm, a.fetch_read = 6, 6, w.started + 0.050  # records and the high watermark in one answer
    swarm.progress(a)
    b.fetch_end, b.hwm, b.fetch_read = 6, 6, w.started + 0.080
    swarm.progress(b)
    w.answered = w.started + 0.060  # the CreateTopics answer read after the first observer's
    assert w.done and abs(w.committed - (w.started + 0.050)) < 1e-9
    assert sorted(round(x) for x in w.from_commit_ms()) == [0, 30]
    assert sorted(round(x) for x in w.delays_ms()) == [50, 80]


def test_the_create_answer_marks_the_commit_when_it_comes_first_and_records_alone_do_not() -> None:
    swarm = _swarm(1)
    (a,) = swarm.brokers.values()
    w = swarm.watch("t")
    read_at = time.monotonic()

    async def admin_send(request: Any, timeout: float = 60.0) -> tuple[Any, int]:
        swarm._admin_read = read_at
        topics = [CreatableTopicResult(name=t.name, error_code=0) for t in request.topics]
        return CreateTopicsResponse(topics=topics), 1

    swarm.admin_send = admin_send  # type: ignore[method-assign]
    assert asyncio.run(swarm.create_topics(["t", "u"], 1, 1)) == {"t": 0, "u": 0}
    assert w.answered == read_at and w.committed == read_at
    swarm.replay.topic_offset["t"] = 5
    a.fetch_end, a.hwm, a.fetch_read = (
        6,
        5,
        read_at + 0.001,
    )  # the record fetched, not yet committed (Kafka's way)
    swarm.progress(a)
    assert w.hwm_seen < 0 and not w.done and w.committed == read_at
    a.hwm, a.fetch_read = 6, read_at + 0.020
    swarm.progress(a)
    assert w.done and [round(x) for x in w.from_commit_ms()] == [20]
