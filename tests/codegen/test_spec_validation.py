"""Every validation rule has one failing fixture; the error must name the file and the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from codegen.model import SpecError, Versions, parse_versions
from codegen.parse import parse_file, parse_text, strip_comments
from codegen.validate import validate

INVALID = Path(__file__).parent / "fixtures" / "invalid"

# fixture file stem -> (text naming the field or key, text naming the rule)
CASES = {
    "bad_versions_syntax": ("Weird", "invalid version range"),
    "missing_flexible_versions": ("flexibleVersions", "required"),
    "flexible_not_open_ended": ("flexibleVersions", "open-ended"),
    "valid_versions_open_ended": ("validVersions", "maximum version"),
    "duplicate_tag": ("Twin", "tag 0 is already used"),
    "tags_not_contiguous": ("Gap", "contiguous"),
    "tag_without_tagged_versions": ("Lonely", "taggedVersions"),
    "tagged_versions_not_open_ended": ("Closed", "open-ended"),
    "tagged_versions_outside_versions": ("Outside", "not within versions"),
    "tagged_versions_not_flexible": ("Early", "flexibleVersions"),
    "tagged_partly_nullable": ("Half", "all or none"),
    "null_default_not_nullable": ("NotNull", '"null" default'),
    "default_out_of_range_int8": ("Small", "out of range"),
    "default_out_of_range_uint16": ("Port", "out of range"),
    "default_out_of_range_hex": ("Hexy", "out of range"),
    "default_not_a_number": ("Wordy", "invalid integer"),
    "default_bad_uuid": ("Dir", "uuid"),
    "default_on_struct": ("Thing", '"null"'),
    "map_key_top_level": ("TopKey", "mapKey"),
    "array_of_arrays": ("Nested", "arrays of arrays"),
    "common_struct_duplicated": ("Shared", "more than once"),
    "common_struct_redefined": ("Again", "redefines a common struct"),
    "struct_defined_twice": ("Second", "defined more than once"),
    "unknown_struct_type": ("Mystery", "unknown struct type"),
    "invalid_field_name": ("bad_name", "invalid field name"),
    "duplicate_field_name": ("Same", "duplicate field name"),
    "field_flexible_versions_on_int": ("Counter", "only allowed on string and bytes"),
    "nullable_int": ("Maybe", "nullableVersions"),
    "unknown_type": ("Odd", "int128"),
    "header_versions_gap": ("headerVersions", "not contiguous"),
    "invalid_message_name": ("name", "capitalized"),
    "reserved_field_name": ("Encode", "clashes with a generated method"),
    "reserved_struct_name": ("UUID", "reserved"),
    "metadata_without_api_key": ("apiKey", "metadata record specs need an apiKey"),
}


def test_every_invalid_fixture_has_a_case() -> None:
    assert {p.stem for p in INVALID.glob("*.json")} == set(CASES)


@pytest.mark.parametrize("stem", sorted(CASES))
def test_invalid_fixture_names_file_and_field(stem: str) -> None:
    field, rule = CASES[stem]
    path = INVALID / f"{stem}.json"
    with pytest.raises(SpecError) as info:
        validate(parse_file(path))
    msg = str(info.value)
    assert str(path) in msg
    assert field in msg
    assert rule in msg


def test_versions_syntax() -> None:
    assert parse_versions("3") == Versions(3, 3)
    assert parse_versions("1-4") == Versions(1, 4)
    assert parse_versions("2+") == Versions(2, 32767)
    assert parse_versions("none") is None
    for bad in ("", "-1", "1-", "a", "3-1", "1+2", "40000"):
        with pytest.raises(ValueError):
            parse_versions(bad)


def test_comments_stripped_outside_strings_only() -> None:
    text = '{"a": "x // not a comment", /* gone */ "b": "/* kept */"} // trailing'
    assert strip_comments(text) == '{"a": "x // not a comment",  "b": "/* kept */"} '


def test_numbers_and_booleans_coerced() -> None:
    spec = parse_text(
        '{"type": "data", "name": "N", "validVersions": 0, "flexibleVersions": "0+", "fields": ['
        '{"name": "A", "type": "int32", "versions": "0+", "default": -1, "ignorable": "true"},'
        '{"name": "B", "type": "bool", "versions": "0+", "default": false, "tag": "0", "taggedVersions": "0+"}]}',
        "inline.json",
    )
    validate(spec)
    a, b = spec.struct.fields
    assert (a.default, a.ignorable) == ("-1", True)
    assert (b.default, b.tag) == ("false", 0)
    assert spec.valid == Versions(0, 0)


def test_invalid_json_names_file() -> None:
    with pytest.raises(SpecError, match="broken.json"):
        parse_text("{ nope", "broken.json")


def test_duplicate_metadata_api_key_names_both_files(tmp_path: Path) -> None:
    # Rule 14: two metadata record specs may not share an api key (the frame decoder is keyed by it).
    from codegen.emit import load_specs

    rec = '{"apiKey": 7, "type": "metadata", "name": "%s", "validVersions": "0", "flexibleVersions": "0+",'
    rec += ' "fields": []}'
    (tmp_path / "ARecord.json").write_text(rec % "ARecord")
    (tmp_path / "BRecord.json").write_text(rec % "BRecord")
    with pytest.raises(
        SpecError, match=r"BRecord.json: apiKey: metadata api key 7 is already used by .*ARecord"
    ):
        load_specs(tmp_path)
