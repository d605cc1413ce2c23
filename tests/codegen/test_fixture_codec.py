"""Generated code for the kitchen-sink fixture: goldens derived by hand, defaults, round trips, errors."""

from __future__ import annotations

from types import ModuleType
from uuid import UUID

import pytest

from kwire.errors import MessageDecodeError, MessageEncodeError, UnsupportedVersionError

# each test runs on the compiled codec engine and on the pure-Python generated code (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("codec_path")

# v0 (not flexible): every present field at its spec default, in spec order.
GOLDEN_V0_DEFAULT = bytes.fromhex(
    "01"  # Bool1 true
    "fb"  # Int8 -5
    "007f"  # Int16 0x7f
    "ffff"  # Uint16 65535
    "7fffffff"  # Int32 0x7fffffff   (Uint32 is 1+)
    "ffffffffffffffff"  # Int64 -1
    "3ff8000000000000"  # Float64 1.5
    "00000000000000000000000000000001"  # Uuid AAAAAAAAAAAAAAAAAAAAAQ
    "000568656c6c6f"  # Str "hello", int16 length
    "ffff"  # NullStr null
    "0000"  # LegacyStr ""
    "00000000"  # Blob b""
    "ffffffff"  # NullBlob null
    "ffffffff"  # Recs null
    "00000000"  # Ints []
    "00000000"  # Structs []
    "00000000"
    "0000"  # Common: Count 0, Label ""
    "ff"  # NullStruct null (int8 marker)
    "00000007"  # Ignored 7
)
# v3 (flexible): compact lengths, LegacyStr still int16 (field-level flexibleVersions none), tag buffers.
PREFIX_V3 = (
    "01"
    "fb"
    "007f"
    "ffff"
    "7fffffff"
    "ffffffff"  # Uint32 4294967295
    "ffffffffffffffff"
    "3ff8000000000000"
    "00000000000000000000000000000001"
    "0668656c6c6f"  # Str, compact
    "00"  # NullStr null
    "0000"  # LegacyStr "" int16 length
    "01"  # Blob
    "00"  # NullBlob null
    "00"  # Recs null
    "01"  # Ints []
    "01"  # Strs []
    "01"  # Uuids []
    "01"  # Structs []
    "00000000"
    "01"
    "00"  # Common: Count, Label, empty tag buffer
    "01"  # MoreCommon []
    "ff"  # NullStruct null
)
GOLDEN_V3_DEFAULT = bytes.fromhex(PREFIX_V3 + "00")
GOLDEN_V3_TAGGED = bytes.fromhex(
    PREFIX_V3 + "06"  # 4 known + 2 unknown tagged fields
    "00"
    "04"
    "00000005"  # tag 0 TaggedInt 5
    "01"
    "02"
    "0278"  # tag 1 TaggedNullStr "x"
    "02"
    "09"
    "0000000000000001"
    "00"  # tag 2 TaggedStruct(A=1) + its tag buffer
    "03"
    "01"
    "00"  # tag 3 TaggedNullStruct null: varint marker 0 (default is an instance)
    "04"
    "00"  # unknown tag 4, empty
    "09"
    "01"
    "01"  # unknown tag 9
)


def test_defaults(ks: ModuleType) -> None:
    m = ks.KitchenSinkRequest()
    assert m.bool1 is True and m.int8 == -5 and m.int16 == 0x7F and m.uint16 == 65535
    assert m.int32 == 0x7FFFFFFF and m.uint32 == 4294967295 and m.int64 == -1 and m.float64 == 1.5
    assert m.uuid == UUID(int=1)
    assert m.str == "hello" and m.null_str is None and m.legacy_str == ""
    assert m.blob == b"" and m.null_blob is None and m.recs is None
    assert m.ints == [] and m.structs == [] and m.common == ks.CommonThing() and m.null_struct is None
    assert m.ignored == 7 and m.tagged_int == -1 and m.tagged_null_str is None
    assert m.tagged_struct == ks.TaggedThing() and m.tagged_null_struct == ks.TaggedNullThing()
    assert m.unknown_tagged_fields == []
    # mutable defaults are per instance
    a, b = ks.KitchenSinkRequest(), ks.KitchenSinkRequest()
    a.ints.append(1)
    assert b.ints == []


def test_class_constants(ks: ModuleType) -> None:
    c = ks.KitchenSinkRequest
    assert (c.NAME, c.API_KEY, c.TYPE) == ("KitchenSinkRequest", 1000, "request")
    assert (c.LOWEST_VERSION, c.HIGHEST_VERSION, c.LOWEST_FLEXIBLE_VERSION) == (0, 3, 2)


def test_golden_defaults(ks: ModuleType) -> None:
    m = ks.KitchenSinkRequest()
    assert m.encode(0) == GOLDEN_V0_DEFAULT
    assert m.encode(3) == GOLDEN_V3_DEFAULT
    assert ks.KitchenSinkRequest.decode(GOLDEN_V0_DEFAULT, 0) == m
    assert ks.KitchenSinkRequest.decode(GOLDEN_V3_DEFAULT, 3) == m


def test_golden_tagged(ks: ModuleType) -> None:
    m = ks.KitchenSinkRequest(
        tagged_int=5,
        tagged_null_str="x",
        tagged_struct=ks.TaggedThing(a=1),
        tagged_null_struct=None,
        unknown_tagged_fields=[(9, b"\x01"), (4, b"")],
    )
    assert m.encode(3) == GOLDEN_V3_TAGGED
    back = ks.KitchenSinkRequest.decode(GOLDEN_V3_TAGGED, 3)
    m.unknown_tagged_fields.sort()
    assert back == m
    assert back.unknown_tagged_fields == [(4, b""), (9, b"\x01")]
    assert back.encode(3) == GOLDEN_V3_TAGGED


def test_struct_array_and_nested_tag_goldens(ks: ModuleType) -> None:
    elem = ks.Elem(key="k", value=2, extra=3)
    m = ks.KitchenSinkRequest(structs=[elem])
    v2 = m.encode(2)
    assert bytes.fromhex("02 026b 00000002 01 00 01 03") in v2
    assert ks.KitchenSinkRequest.decode(v2, 2).structs == [elem]
    with pytest.raises(MessageEncodeError, match="Extra"):
        m.encode(1)  # Extra is tagged (2+) and not ignorable
    m.structs = [ks.Elem(key="k", value=2)]
    assert bytes.fromhex("00000001 00016b 00000002") in m.encode(1)


def test_nullable_struct_marker(ks: ModuleType) -> None:
    m = ks.KitchenSinkRequest(null_struct=ks.NullableThing(x=0x102))
    enc = m.encode(0)
    assert enc == GOLDEN_V0_DEFAULT[:-5] + bytes.fromhex("01 0102") + GOLDEN_V0_DEFAULT[-4:]
    assert ks.KitchenSinkRequest.decode(enc, 0) == m


def full(ks: ModuleType) -> object:
    return ks.KitchenSinkRequest(
        bool1=False,
        int8=-128,
        int16=-32768,
        uint16=0,
        int32=-(2**31),
        uint32=2**32 - 1,
        int64=2**63 - 1,
        float64=-0.25,
        uuid=UUID("12345678-1234-5678-1234-567812345678"),
        str="héllo",
        null_str="n",
        legacy_str=None,
        blob=b"\x00\x01",
        null_blob=b"",
        recs=b"\x05" * 300,
        ints=[1, -2, 3],
        strs=["a", "b" * 200],
        uuids=[UUID(int=7)],
        structs=[ks.Elem(key="a", value=1, extra=9)],
        common=ks.CommonThing(count=3, label="L"),
        more_common=None,
        null_struct=ks.NullableThing(x=-1),
        ignored=7,
        tagged_int=0,
        tagged_null_str="t",
        tagged_struct=ks.TaggedThing(a=-9),
        tagged_null_struct=ks.TaggedNullThing(b=True),
        unknown_tagged_fields=[(77, b"zz")],
    )


def test_round_trip_latest(ks: ModuleType) -> None:
    m = full(ks)
    enc = m.encode(3)
    assert ks.KitchenSinkRequest.decode(enc, 3) == m
    assert ks.KitchenSinkRequest.decode(bytearray(enc), 3) == m
    assert ks.KitchenSinkRequest.decode(memoryview(enc), 3) == m
    # 300-byte records need a 2-byte varint length (301 = 0xad 0x02)
    assert b"\xad\x02" + b"\x05" * 300 in enc


def test_read_with_offset(ks: ModuleType) -> None:
    m = full(ks)
    buf = b"\xaa\xbb" + m.encode(3) + b"\xcc"
    obj, end = ks.KitchenSinkRequest.read(buf, 2, 3)
    assert obj == m and end == len(buf) - 1
    with pytest.raises(MessageDecodeError, match="trailing"):
        ks.KitchenSinkRequest.decode(buf[2:], 3)


def test_ignorable_fields_dropped(ks: ModuleType) -> None:
    m = ks.KitchenSinkRequest(strs=["x"], uuids=[UUID(int=3)], more_common=[ks.CommonThing()], ignored=99)
    # v0 lacks Strs, Uuids, MoreCommon (all ignorable); Ignored is present in v0
    base = ks.KitchenSinkRequest(ignored=99)
    assert m.encode(0) == base.encode(0)
    # v3 lacks Ignored (ignorable): dropped silently
    assert ks.KitchenSinkRequest(ignored=99).encode(3) == GOLDEN_V3_DEFAULT


def test_non_ignorable_non_default_fails(ks: ModuleType) -> None:
    with pytest.raises(MessageEncodeError, match="Uint32.*version 0"):
        ks.KitchenSinkRequest(uint32=5).encode(0)
    ks.KitchenSinkRequest(uint32=4294967295).encode(0)  # default value is fine


def test_tagged_fields_at_non_flexible_version(ks: ModuleType) -> None:
    with pytest.raises(MessageEncodeError, match="TaggedInt"):
        ks.KitchenSinkRequest(tagged_int=5).encode(1)
    with pytest.raises(MessageEncodeError, match="Tagged fields were set"):
        ks.KitchenSinkRequest(unknown_tagged_fields=[(5, b"")]).encode(1)
    with pytest.raises(MessageEncodeError, match="Tagged fields were set"):
        ks.KitchenSinkRequest(common=ks.CommonThing(unknown_tagged_fields=[(5, b"")])).encode(0)


def test_unsupported_versions(ks: ModuleType) -> None:
    m = ks.KitchenSinkRequest()
    for v in (-1, 4, 100):
        with pytest.raises(UnsupportedVersionError):
            m.encode(v)
        with pytest.raises(UnsupportedVersionError):
            ks.KitchenSinkRequest.decode(GOLDEN_V3_DEFAULT, v)


@pytest.mark.parametrize(
    ("attr", "value"),
    [
        ("str", None),
        ("blob", None),
        ("ints", None),
        ("common", None),
        ("uuid", None),
        ("int32", None),
        ("structs", [None]),
    ],
)
def test_null_into_non_nullable_fails(ks: ModuleType, attr: str, value: object) -> None:
    m = ks.KitchenSinkRequest()
    setattr(m, attr, value)
    out = bytearray(b"keep")
    with pytest.raises(MessageEncodeError):
        m.write(out, 3)
    assert out == b"keep"  # nothing appended on failure


def test_nullable_only_in_some_versions(ks: ModuleType) -> None:
    m = ks.KitchenSinkRequest(legacy_str=None)
    with pytest.raises(MessageEncodeError, match="LegacyStr"):
        m.encode(0)
    assert b"\xff\xff" in m.encode(1)
    assert ks.KitchenSinkRequest.decode(m.encode(1), 1).legacy_str is None


@pytest.mark.parametrize(
    ("attr", "value"),
    [
        ("int8", 128),
        ("int8", -129),
        ("int16", 2**15),
        ("uint16", -1),
        ("uint16", 65536),
        ("int32", 2**31),
        ("uint32", -1),
        ("uint32", 2**32),
        ("int64", 2**63),
        ("ints", [2**31]),
        ("str", "x" * 40000),
        ("unknown_tagged_fields", [(-1, b"")]),
    ],
)
def test_range_checks(ks: ModuleType, attr: str, value: object) -> None:
    m = ks.KitchenSinkRequest()
    setattr(m, attr, value)
    with pytest.raises(MessageEncodeError):
        m.encode(3)


def test_negative_length_for_non_nullable_field(ks: ModuleType) -> None:
    # Str is at offset 42 in v0 (after 42 bytes of fixed fields); replace it by a -1 length.
    assert GOLDEN_V0_DEFAULT[42:49] == b"\x00\x05hello"
    bad = GOLDEN_V0_DEFAULT[:42] + b"\xff\xff" + GOLDEN_V0_DEFAULT[49:]
    with pytest.raises(MessageDecodeError, match="non-nullable field Str was serialized as null"):
        ks.KitchenSinkRequest.decode(bad, 0)


def test_known_tag_invalid_for_version(ks: ModuleType) -> None:
    # At v2, tag 3 (TaggedNullStruct, 3+) is known but not valid.
    v2 = ks.KitchenSinkRequest().encode(2)
    assert v2[-1] == 0
    bad = v2[:-1] + bytes.fromhex("01 03 01 00")
    with pytest.raises(MessageDecodeError, match="Tag 3 is not valid"):
        ks.KitchenSinkRequest.decode(bad, 2)
    ok = v2[:-1] + bytes.fromhex("01 04 01 00")  # unknown tag 4 is kept
    assert ks.KitchenSinkRequest.decode(ok, 2).unknown_tagged_fields == [(4, b"\x00")]


def test_huge_array_count_rejected_before_allocating(ks: ModuleType) -> None:
    # Ints count starts right after Recs in v0: offset 42 + 7 + 2 + 2 + 4 + 4 + 4 = 65.
    assert GOLDEN_V0_DEFAULT[65:69] == b"\x00\x00\x00\x00"
    bad = GOLDEN_V0_DEFAULT[:65] + b"\x7f\xff\xff\xff" + GOLDEN_V0_DEFAULT[69:]
    with pytest.raises(MessageDecodeError, match="Ints"):
        ks.KitchenSinkRequest.decode(bad, 0)
    assert GOLDEN_V0_DEFAULT[53:57] == b"\x00\x00\x00\x00"
    huge_blob = GOLDEN_V0_DEFAULT[:53] + b"\x7f\xff\xff\xff" + GOLDEN_V0_DEFAULT[57:]
    with pytest.raises(MessageDecodeError, match="Blob"):
        ks.KitchenSinkRequest.decode(huge_blob, 0)


def test_every_truncation_is_a_decode_error(ks: ModuleType) -> None:
    for v in range(4):
        m = full(ks)
        if v < 3:
            m.uuids = []
            m.tagged_null_struct = ks.TaggedNullThing()
        if v < 2:
            m.tagged_int, m.tagged_null_str, m.tagged_struct = -1, None, ks.TaggedThing()
            m.unknown_tagged_fields = []
            m.structs = [ks.Elem(key="a", value=1)]
        if v < 1:
            m.uint32, m.strs, m.more_common, m.legacy_str = 2**32 - 1, [], [], ""
        enc = m.encode(v)
        assert ks.KitchenSinkRequest.decode(enc, v).encode(v) == enc
        for cut in range(len(enc)):
            with pytest.raises(MessageDecodeError):
                ks.KitchenSinkRequest.decode(enc[:cut], v)


def test_invalid_utf8_is_a_decode_error(ks: ModuleType) -> None:
    bad = GOLDEN_V0_DEFAULT.replace(b"hello", b"h\xffllo")
    with pytest.raises(MessageDecodeError):
        ks.KitchenSinkRequest.decode(bad, 0)


def test_overlong_varint_is_a_decode_error(ks: ModuleType) -> None:
    bad = GOLDEN_V3_DEFAULT[:-1] + b"\xff\xff\xff\xff\xff\x01"
    with pytest.raises(MessageDecodeError):
        ks.KitchenSinkRequest.decode(bad, 3)


def test_fields_metadata(ks: ModuleType) -> None:
    by = {f.name: f for f in ks.KitchenSinkRequest.FIELDS}
    assert [f.name for f in ks.KitchenSinkRequest.FIELDS][:3] == ["Bool1", "Int8", "Int16"]
    assert by["Uint32"].versions == (1, 32767) and by["Uint32"].default == 4294967295
    assert by["Ignored"].versions == (0, 1) and by["Ignored"].ignorable
    assert by["NullStr"].nullable_versions == (0, 32767) and by["NullStr"].default is None
    assert by["TaggedInt"].tag == 0 and by["TaggedInt"].tagged_versions == (2, 32767)
    assert by["TaggedInt"].versions == (2, 32767)  # versions default to taggedVersions
    assert by["Uuid"].default == UUID(int=1) and by["Uuid"].type == "uuid"
    assert (
        by["Structs"].type == "[]Elem" and by["Structs"].struct is ks.Elem and by["Structs"].default is None
    )
    assert by["Common"].struct is ks.CommonThing and by["Common"].attr == "common"
    assert by["Ints"].struct is None
    elem = {f.name: f for f in ks.Elem.FIELDS}
    assert elem["Key"].map_key and not elem["Value"].map_key


def test_kraft_snake_case_and_registry(cgfx: ModuleType) -> None:
    import importlib

    msgs = importlib.import_module("cgfx.messages")
    resp = importlib.import_module("cgfx.kitchen_sink_response").KitchenSinkResponse
    assert resp().kraft_version_feature == 0
    assert importlib.import_module("cgfx.plain_data_record").PlainDataRecord().replica_directory_id == UUID(
        int=0
    )
    req = importlib.import_module("cgfx.kitchen_sink_request").KitchenSinkRequest
    assert msgs.by_name("KitchenSinkRequest") is req
    assert msgs.by_api_key(1000) == (req, resp)
    spec = msgs.API_SPECS[1000]
    assert spec.name == "KitchenSink" and spec.listeners == frozenset({"controller", "broker"})
    assert spec.latest_version_unstable and (spec.lowest_version, spec.highest_version) == (0, 3)
    # the spec's headerVersions map wins over the flexible-version rule (which would give 2 at v2)
    assert [spec.request_header_version(v) for v in range(4)] == [1, 1, 1, 2]
    assert [spec.response_header_version(v) for v in range(4)] == [0, 0, 1, 1]
    assert set(msgs.ALL_CLASSES) == {req, resp, msgs.by_name("PlainDataRecord")}


def test_unknown_tags_on_struct_ending_in_fixed_fields(ks: ModuleType) -> None:
    # TaggedThing is all fixed-width, so its empty tag buffer is packed with A; unknown tags replace it.
    m = ks.KitchenSinkRequest(tagged_struct=ks.TaggedThing(a=1, unknown_tagged_fields=[(0, b"z")]))
    enc = m.encode(2)
    assert bytes.fromhex("02 0c 0000000000000001 01 00 01 7a") in enc
    assert ks.KitchenSinkRequest.decode(enc, 2) == m


@pytest.mark.parametrize("count", [0, 1, 125, 126, 127, 128, 300])
def test_primitive_array_counts_around_varint_boundary(ks: ModuleType, count: int) -> None:
    m = ks.KitchenSinkRequest(ints=[i - count // 2 for i in range(count)])
    enc = m.encode(3)
    prefix = bytes.fromhex(PREFIX_V3)
    at = prefix.index(bytes.fromhex("01 01 01 01 00000000"))  # Ints, Strs, Uuids, Structs, Common
    head = bytes([count + 1]) if count + 1 < 128 else bytes([((count + 1) & 0x7F) | 0x80, (count + 1) >> 7])
    assert enc[at : at + len(head)] == head
    assert ks.KitchenSinkRequest.decode(enc, 3) == m
    assert ks.KitchenSinkRequest.decode(m.encode(0), 0).ints == m.ints
