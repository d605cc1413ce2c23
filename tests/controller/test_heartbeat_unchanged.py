"""kraftd.controller.ops.brokers contract 3: the short path's answer is the full heartbeat's answer, or None
where the full heartbeat writes records or refuses (hypothesis over brokers' states and requests)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kraftd.controller import brokers
from kraftd.controller.ops import brokers as ops
from tests.helpers.controller import apply_records, cluster, heartbeat, topic


@settings(max_examples=200, deadline=None)
@given(
    bid=st.integers(1, 4),
    epoch_delta=st.sampled_from([0, 0, 0, 1]),
    offset_delta=st.integers(-3, 2),
    shut=st.booleans(),
    fence=st.booleans(),
    fenced_first=st.booleans(),
    shutting_first=st.booleans(),
)
def test_the_short_answer_is_the_full_answer(
    bid: int,
    epoch_delta: int,
    offset_delta: int,
    shut: bool,
    fence: bool,
    fenced_first: bool,
    shutting_first: bool,
) -> None:
    image, hb = cluster(3)  # broker 4 is not registered
    topic(image, [1, 2, 3], [1, 2, 3], 1)
    if fenced_first:
        apply_records(image, brokers.fence(image, 2))
    if shutting_first:
        apply_records(
            image, brokers.heartbeat(image, heartbeat(image, 3, want_shut_down=True), hb, 5).records
        )
    b = image.brokers.get(bid)
    req: Any = heartbeat(image, 1, want_shut_down=shut, want_fence=fence)
    req.broker_id = bid
    req.broker_epoch = (b.epoch if b else 1) + epoch_delta
    req.current_metadata_offset = max(0, image.offset + offset_delta)
    short_hb, full_hb = brokers.Heartbeats(), brokers.Heartbeats()
    short = ops.heartbeat_unchanged(image, req, short_hb, 10)
    full = ops.heartbeat(image, req, full_hb, 10)
    if short is None:
        assert full.records or full.response.error_code or b is None or b.fenced or shut or fence
        return
    assert not full.records and full.response == short
    assert short_hb == full_hb  # the session touched, the metadata offset noted, as the full path does
