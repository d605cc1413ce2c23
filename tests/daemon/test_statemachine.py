"""The daemon's default state machine (kraftd.shell.statemachine): committed values, Kafka metadata
transactions resolved as a controller replays them, snapshot loading."""

from __future__ import annotations

from kraftd.core.batches import data_batch
from kraftd.core.log import OffsetAndEpoch
from kraftd.core.snapshots import build_snapshot
from kraftd.core.types import VoterSet
from kraftd.shell.statemachine import RecordsState, metadata_api_key


def rec(api_key: int, body: bytes = b"") -> bytes:
    return bytes([1, api_key, 0]) + body  # frame version 1, api key, record version 0


def test_transactions_resolve_and_markers_never_reach_a_snapshot() -> None:
    st = RecordsState()
    values = [
        b"plain",
        rec(23),
        rec(3, b"a"),
        rec(24),
        rec(23),
        rec(3, b"x"),
        rec(25),
        rec(12, b"b"),
        rec(23),
    ]
    st.handle_commit((data_batch(0, 1, values[:4], 0),), 4)
    assert st.values == [b"plain", rec(3, b"a")] and st.snapshot_safe
    st.handle_commit((data_batch(4, 1, values[4:], 0),), 9)
    assert st.values == [b"plain", rec(3, b"a"), rec(12, b"b")]
    assert not st.snapshot_safe  # a transaction is open at the end
    assert metadata_api_key(bytes([1, 0xAC, 0x02, 0])) == 300  # a two-byte varint
    assert metadata_api_key(b"\x02\x01\x00") is None


def test_a_snapshot_replaces_the_state() -> None:
    st = RecordsState()
    st.handle_commit((data_batch(0, 1, [b"old"], 0),), 1)
    snap = build_snapshot(
        OffsetAndEpoch(7, 2),
        [b"a", b"b"],
        kraft_version=0,
        voters=VoterSet.of(1),
        now_ms=0,
        max_batch_bytes=100,
    )
    st.handle_load_snapshot(snap)
    assert st.values == [b"a", b"b"] and st.end_offset == 7
    st.handle_commit((data_batch(5, 2, [b"skip"], 0), data_batch(7, 2, [b"c"], 0)), 8)
    assert st.values == [b"a", b"b", b"c"]
