"""tools.swarm.decoding: identical answers (but for the correlation id) to many swarm brokers are decoded once."""

from __future__ import annotations

from generated.broker_heartbeat_response import BrokerHeartbeatResponse
from generated.vote_response import VoteResponse
from kraftd.core import messages as m
from kraftd.core.batches import data_batch
from kwire.headers import encode_response
from tools.swarm.decoding import BROKER_HEARTBEAT, EDGE, FETCH, SharedDecodes

VOTE = 52


def test_identical_fetch_answers_decode_once_and_keep_their_correlation_ids() -> None:
    d = SharedDecodes()
    batch = data_batch(7, 3, [b"a", b"b"], 0)
    body = m.fetch_response(0, 0, 1, 3, 9, [batch])
    got = [d.decode(encode_response(FETCH, 17, cid, body), FETCH, 17) for cid in range(500)]
    assert [cid for cid, _ in got] == list(range(500))
    assert len({id(b) for _, b in got}) == 1 and d.decoded == 1 and d.shared == 499
    part = m.single_partition(got[0][1])
    assert part is not None and part.high_watermark == 9 and bytes(part.records) == batch.data
    other = d.decode(encode_response(FETCH, 17, 1, m.fetch_response(0, 0, 1, 3, 10, [batch])), FETCH, 17)
    assert other[1] is not got[0][1] and m.single_partition(other[1]).high_watermark == 10  # type: ignore[union-attr]
    again = d.decode(encode_response(FETCH, 16, 1, body), FETCH, 16)  # another version: its own decoding
    assert again[1] is not got[0][1] and d.decoded == 3


def test_heartbeats_shared_other_apis_and_large_answers_not_and_the_oldest_dropped() -> None:
    d = SharedDecodes(limit=2, max_bytes=200)
    hb = BrokerHeartbeatResponse(error_code=0, is_caught_up=True, is_fenced=False)
    a = d.decode(encode_response(BROKER_HEARTBEAT, 1, 5, hb), BROKER_HEARTBEAT, 1)
    b = d.decode(encode_response(BROKER_HEARTBEAT, 1, 6, hb), BROKER_HEARTBEAT, 1)
    assert a[1] is b[1] and (a[0], b[0]) == (5, 6) and b[1].is_caught_up
    vote = VoteResponse(error_code=0)
    v1 = d.decode(encode_response(VOTE, 2, 1, vote), VOTE, 2)
    v2 = d.decode(encode_response(VOTE, 2, 2, vote), VOTE, 2)
    assert v1[1] is not v2[1]
    big = m.fetch_response(0, 0, 1, 3, 9, [data_batch(0, 3, [b"x" * 300], 0)])
    f1 = d.decode(encode_response(FETCH, 17, 1, big), FETCH, 17)
    f2 = d.decode(encode_response(FETCH, 17, 2, big), FETCH, 17)
    assert f1[1] is not f2[1]
    for hwm in (1, 2, 3):  # a limit of two: the heartbeat answer is dropped
        d.decode(encode_response(FETCH, 17, 1, m.fetch_response(0, 0, 1, 3, hwm)), FETCH, 17)
    assert len(d.entries) == 2
    c = d.decode(encode_response(BROKER_HEARTBEAT, 1, 7, hb), BROKER_HEARTBEAT, 1)
    assert c[1] is not a[1] and c[1] == a[1]


def test_large_fetch_answers_are_shared_by_their_edges_not_by_hashing_every_byte() -> None:
    """Contract 4: one commit's batches (0.6 MB at 1M partitions) reach every observer at the log end, and every
    catching-up observer gets up to 8 MiB: decoded once for all (a 2 MiB answer was decoded per broker), known by
    2 x EDGE bytes (every byte was hashed, 129 us per 0.6 MB answer and broker); answers that differ in where the
    records start, how long they are or which leader sent them are decoded apart."""
    d = SharedDecodes()
    first = data_batch(100, 3, [bytes([i % 251]) * 100 for i in range(10_000)], 0)
    second = data_batch(10_100, 3, [b"y" * 100] * 10_000, 0)
    big = m.fetch_response(0, 0, 1, 3, 20_100, [first, second])
    frame = encode_response(FETCH, 17, 0, big)
    assert len(frame) > 2 << 20
    got = [d.decode(encode_response(FETCH, 17, cid, big), FETCH, 17) for cid in range(200)]
    assert [cid for cid, _ in got] == list(range(200))
    assert len({id(b) for _, b in got}) == 1 and d.decoded == 1 and d.shared == 199
    assert bytes(m.single_partition(got[0][1]).records) == first.data + second.data  # type: ignore[union-attr]
    assert all(len(k[3]) + len(k[4]) <= 2 * EDGE for k in d.entries)
    shorter = m.fetch_response(0, 0, 1, 3, 20_100, [first])  # the same start, fewer batches
    other_leader = m.fetch_response(0, 0, 2, 4, 20_100, [first, second])  # the same records, a new epoch
    later = m.fetch_response(0, 0, 1, 3, 20_100, [second])  # another start
    for body in (shorter, other_leader, later):
        _, decoded = d.decode(encode_response(FETCH, 17, 7, body), FETCH, 17)
        assert decoded is not got[0][1] and decoded == body
    assert d.decoded == 4


def test_kept_answers_stay_within_the_byte_budget() -> None:
    """Contract 3: large answers are dropped, oldest first, once their frames exceed the budget."""
    d = SharedDecodes(budget=3 << 20)
    for hwm in range(5):
        body = m.fetch_response(0, 0, 1, 3, hwm, [data_batch(0, 3, [b"z" * 1000] * 1000, 0)])
        d.decode(encode_response(FETCH, 17, 1, body), FETCH, 17)
        assert d.held <= 3 << 20 and d.held == sum(len(f) for f, _ in d.entries.values())
    assert len(d.entries) == 3


def test_a_large_answer_is_found_by_its_edges_and_taken_only_when_every_byte_matches() -> None:
    """Contract 4: no hash of the whole answer (its key holds its size and edges); a same-size answer differing
    only in the middle is decoded on its own."""
    d = SharedDecodes()
    records = [b"x" * 1000 for _ in range(200)]  # ~200 KB
    body = m.fetch_response(0, 0, 1, 3, 9, [data_batch(0, 3, records, 0)])
    got = [d.decode(encode_response(FETCH, 17, cid, body), FETCH, 17) for cid in range(100)]
    assert d.decoded == 1 and d.shared == 99 and len({id(b) for _, b in got}) == 1
    assert all(len(k[3]) <= EDGE and len(k[4]) <= EDGE for k in d.entries)
    changed = list(records)
    changed[100] = b"y" * 1000  # same size, same edges
    other = m.fetch_response(0, 0, 1, 3, 9, [data_batch(0, 3, changed, 0)])
    o = d.decode(encode_response(FETCH, 17, 7, other), FETCH, 17)
    assert o[1] is not got[0][1] and d.decoded == 2
    part = m.single_partition(o[1])
    assert part is not None and b"y" * 1000 in bytes(part.records)
    again = d.decode(encode_response(FETCH, 17, 8, body), FETCH, 17)  # the stored answer is still found
    assert again[1] is got[0][1]


def test_the_batch_ends_of_a_shared_answer_are_walked_once() -> None:
    """Contract 5: 500 brokers handed one answer object walk its batch headers once."""
    d = SharedDecodes()
    body = m.fetch_response(0, 0, 1, 3, 9, [data_batch(7, 3, [b"a", b"b"], 0), data_batch(9, 3, [b"c"], 0)])
    answers = [d.decode(encode_response(FETCH, 17, cid, body), FETCH, 17)[1] for cid in range(500)]
    ends = {d.batch_ends(m.single_partition(a).records) for a in answers}  # type: ignore[union-attr]
    assert ends == {(10, 3)} and d.walks == 1
