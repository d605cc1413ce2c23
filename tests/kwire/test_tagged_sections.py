"""Tagged-field sections as the generated writers emit them (kwire.codec.write_tagged / write_sorted_tagged).

Reference: a section is count, then (tag, size, payload) with tag and size as unsigned varints, ascending by tag
(KIP-482). The reference below is built from Kafka's unsigned varint alone (kwire.varint), independently of
the fast path's two-byte tag/size parts.
"""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from generated import messages
from kwire.codec import write_sorted_tagged, write_tagged
from kwire.errors import MessageEncodeError
from kwire.varint import encode_unsigned_varint


def _reference(fields: list[tuple[int, bytes]]) -> bytes:
    out = bytearray(encode_unsigned_varint(len(fields)))
    for tag, payload in sorted(fields, key=lambda f: f[0]):
        out += encode_unsigned_varint(tag) + encode_unsigned_varint(len(payload)) + payload
    return bytes(out)


_fields = st.lists(
    st.tuples(
        st.one_of(st.integers(0, 130), st.integers(0, 2**32 - 1)),
        st.one_of(st.binary(max_size=4), st.binary(min_size=126, max_size=300)),
    ),
    max_size=6,
)


@given(_fields)
def test_sections_match_the_varint_reference(fields):
    unsorted: list[bytes] = []
    write_tagged(unsorted, fields)
    assert b"".join(unsorted) == _reference(fields)
    presorted: list[bytes] = []
    write_sorted_tagged(presorted, sorted(fields, key=lambda f: f[0]))
    assert b"".join(presorted) == _reference(fields)


def test_more_than_127_fields_use_a_varint_count():
    fields = [(t, b"") for t in range(200)]
    out: list[bytes] = []
    write_sorted_tagged(out, fields)
    assert b"".join(out) == _reference(fields)
    assert b"".join(out)[:2] == bytes.fromhex("c801")


@pytest.mark.parametrize("tag", [-1, "3", 2**32])
def test_invalid_tags_are_refused(tag):
    with pytest.raises(MessageEncodeError):
        write_sorted_tagged([], [(tag, b"x")])
    with pytest.raises(MessageEncodeError):
        write_tagged([], [(tag, b"x")])


def _partition(**kw):
    cls = messages.by_name("FetchResponse")
    topic = next(f.struct for f in cls.FIELDS if f.attr == "responses")
    part = next(f.struct for f in topic.FIELDS if f.attr == "partitions")
    epoch = next(f.struct for f in part.FIELDS if f.attr == "diverging_epoch")
    snap = next(f.struct for f in part.FIELDS if f.attr == "snapshot_id")
    p = part(partition_index=3, records=b"abc", **kw)
    p.diverging_epoch = epoch(epoch=4, end_offset=99)
    p.snapshot_id = snap(end_offset=10, epoch=2)
    return cls(responses=[topic(topic_id=uuid.UUID(int=5), partitions=[p])]), p


def test_known_and_unknown_tags_interleave_in_tag_order():
    # known tags 0 and 2 are set; unknown tags 9 and 3 arrive unsorted: the section must read 0, 2, 3, 9
    msg, p = _partition()
    p.unknown_tagged_fields = [(9, b"\x01"), (3, b"\x02\x03")]
    wire = msg.encode(16)
    back = type(msg).decode(wire, 16)
    q = back.responses[0].partitions[0]
    assert q.diverging_epoch == p.diverging_epoch and q.snapshot_id == p.snapshot_id
    assert q.unknown_tagged_fields == [(3, b"\x02\x03"), (9, b"\x01")]
    section_start = wire.index(b"\x04\x00")  # 4 tagged fields, then tag 0
    tags_in_order = []
    pos = section_start + 1
    for _ in range(4):
        tags_in_order.append(wire[pos])
        pos += 2 + wire[pos + 1]
    assert tags_in_order == [0, 2, 3, 9]


def test_only_known_tags_are_written_without_unknown_ones():
    msg, p = _partition()
    back = type(msg).decode(msg.encode(16), 16)
    q = back.responses[0].partitions[0]
    assert (q.diverging_epoch, q.snapshot_id, q.unknown_tagged_fields) == (
        p.diverging_epoch,
        p.snapshot_id,
        [],
    )
