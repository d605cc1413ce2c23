"""kraftd.controller.brokers contract 4a: a controlled shutdown held back only by other brokers' reports is released
by the report that brings the last of them to its shutdown offset, not by the shutting-down broker's next
heartbeat (sans-IO, virtual time)."""

from __future__ import annotations

import random

from generated.create_topics_request import CreatableTopic, CreateTopicsRequest
from kraftd.controller import brokers, topics
from tests.helpers.controller import apply_records as _apply
from tests.helpers.controller import cluster as _cluster
from tests.helpers.controller import heartbeat as _hb


def test_the_last_report_at_the_shutdown_offset_releases_the_shutdown() -> None:
    image, hb = _cluster(4)
    req = CreateTopicsRequest(topics=[CreatableTopic("t", 6, 3)])
    _apply(image, topics.create_topics(image, req, random.Random(3))[0])
    for bid in (2, 3, 4):
        brokers.heartbeat(image, _hb(image, bid), hb, 1000)
    asked = brokers.heartbeat(image, _hb(image, 1, want_shut_down=True), hb, 1000)
    assert asked.records and not asked.should_shut_down
    assert not brokers.await_shutdown(image, hb, 1)  # its moves are not applied yet: it still leads
    _apply(image, asked.records)
    target = hb.shutdown_offset[1]
    assert brokers.await_shutdown(image, hb, 1) and hb.shutdown_behind[1] == {2, 3, 4}
    brokers.heartbeat(image, _hb(image, 2, current_metadata_offset=target), hb, 1500)
    brokers.heartbeat(image, _hb(image, 3, current_metadata_offset=target - 1), hb, 1600)
    assert not hb.shutdown_ready(1) and hb.shutdown_behind[1] == {3, 4}
    brokers.heartbeat(image, _hb(image, 3, current_metadata_offset=target), hb, 1700)
    brokers.heartbeat(image, _hb(image, 4, current_metadata_offset=target), hb, 1700)
    assert hb.shutdown_ready(1)
    # decided again now, the held heartbeat is told to shut down, and fenced
    again = brokers.heartbeat(image, _hb(image, 1, want_shut_down=True), hb, 1000)
    assert again.should_shut_down and again.is_fenced
    hb.stop_waiting(1)
    assert not hb.shutdown_ready(1) and 1 not in hb.shutdown_behind


def test_nothing_to_wait_for_once_every_active_broker_reported() -> None:
    image, hb = _cluster(3)
    req = CreateTopicsRequest(topics=[CreatableTopic("t", 3, 3)])
    _apply(image, topics.create_topics(image, req, random.Random(5))[0])
    _apply(image, brokers.heartbeat(image, _hb(image, 1, want_shut_down=True), hb, 0).records)
    for bid in (2, 3):
        brokers.heartbeat(image, _hb(image, bid), hb, 0)  # at the image's end
    assert not brokers.await_shutdown(image, hb, 1) and 1 not in hb.shutdown_behind
    assert brokers.heartbeat(image, _hb(image, 1, want_shut_down=True), hb, 0).should_shut_down
