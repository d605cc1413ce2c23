"""Spec validation: the checks Kafka's generator (FieldSpec, StructSpec, MessageSpec, Versions) performs.

Every failure raises :class:`SpecError` naming the file and the field. Rules, numbered as the tests use them:
 1. validVersions has a maximum (not open-ended) — Kafka: "does not specify a maximum version".
 2. flexibleVersions is required and "none" or open-ended (checked in parse).
 3. Field names match ``[A-Za-z][A-Za-z0-9]*`` and are unique within a struct; the message name is
    capitalized alphanumeric (it becomes a class and a module name).
 4. Tags are unique within a struct and contiguous from 0; a tag needs taggedVersions and vice versa.
 5. taggedVersions is open-ended, within the field's versions and within the message's flexibleVersions.
 6. A tagged field is nullable in all of its tagged versions or in none of them.
 7. A "null" default needs nullableVersions covering every version of the field.
 8. Defaults parse for their type: ints in range (decimal or "0x" hex), uuid as base64url, bool, float;
    bytes/struct/array defaults only "" or "null".
 9. mapKey is not allowed on top-level fields nor on tagged fields.
10. No arrays of arrays; nullableVersions only on string/bytes/records/struct/array types.
11. Field-level flexibleVersions only on string and bytes fields.
12. headerVersions, if given, covers 0+ contiguously (request/response specs only).
13. Struct names are unique in a file (also checked in parse for redefinitions and common structs) and do
    not shadow a name the generated module uses; field attributes do not shadow generated methods.
14. A "metadata" spec (a KRaft metadata record) needs an apiKey in 0..32767 (the frame carries it as an
    unsigned varint and the registry is keyed by it); api keys are unique per spec type (checked in emit).
"""

from __future__ import annotations

import base64
import binascii
import re
from uuid import UUID

from codegen.model import INT_RANGES, PRIMITIVES, FieldSpec, MessageSpec, SpecError, StructSpec, Versions

_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9]*$")
_NULLABLE_TYPES = frozenset({"string", "bytes", "records"})
# Names every generated module defines or imports at module level, and attributes every class has.
RESERVED_STRUCT_NAMES = frozenset(
    {"UUID", "Callable", "ClassVar", "FieldInfo", "struct", "dataclass", "field"}
)
RESERVED_ATTRS = frozenset({"encode", "decode", "write", "read", "unknown_tagged_fields"})


def snake_attr(name: str) -> str:
    """The Python attribute of a field name (same rule as codegen.names.snake, kept import-cycle free)."""
    s = name.replace("KRaft", "Kraft")
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", s)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s).lower()


def parse_int_default(text: str, ftype: str) -> int:
    """Kafka's integer default parsing: decimal or 0x-prefixed hex, range-checked for ``ftype``."""
    t = text.strip()
    neg = t.startswith("-")
    body = t[1:] if neg else t
    if body.lower().startswith("0x"):
        value = int(body[2:], 16)
    else:
        if not re.fullmatch(r"\d+", body):
            raise ValueError(f"invalid integer default {text!r}")
        value = int(body)
    value = -value if neg else value
    lo, hi = INT_RANGES[ftype]
    if not lo <= value <= hi:
        raise ValueError(f"default {text!r} is out of range for {ftype} [{lo}, {hi}]")
    return value


def parse_uuid_default(text: str) -> UUID:
    """A Kafka uuid default: 22 base64url characters without padding (Uuid.fromString)."""
    if len(text) != 22 or not re.fullmatch(r"[A-Za-z0-9_-]+", text):
        raise ValueError(f"uuid default {text!r} is not 22 base64url characters")
    try:
        raw = base64.urlsafe_b64decode(text + "==")
    except (binascii.Error, ValueError):
        raise ValueError(f"uuid default {text!r} is not valid base64url") from None
    if len(raw) != 16:
        raise ValueError(f"uuid default {text!r} does not decode to 16 bytes")
    return UUID(bytes=raw)


def check_default(f: FieldSpec) -> None:
    """Raise ValueError when ``f.default`` is not acceptable for the field's type (rules 7, 8)."""
    d = f.default
    if d is None or (d == "" and f.type not in INT_RANGES and f.type not in ("float64", "uuid", "bool")):
        return
    if d == "null":
        if f.versions is None or f.nullable is None or not f.nullable.contains_range(f.versions):
            raise ValueError(
                'a "null" default requires nullableVersions covering all of the field\'s versions'
            )
        return
    if f.type in INT_RANGES:
        parse_int_default(d, f.type)
    elif f.type == "uuid":
        parse_uuid_default(d)
    elif f.type == "bool":
        if d.lower() not in ("true", "false"):
            raise ValueError(f"invalid bool default {d!r}")
    elif f.type == "float64":
        float(d)
    elif f.type == "string":
        pass
    else:
        raise ValueError(f'type {f.type} only accepts "" or "null" as a default, got {d!r}')


def _check_type(f: FieldSpec) -> None:
    if f.is_array and f.elem.startswith("[]"):
        raise ValueError(f"arrays of arrays are not supported: {f.type}")
    elem = f.elem
    if elem not in PRIMITIVES and not _NAME_RE.match(elem):
        raise ValueError(f"invalid type {f.type}")
    if elem not in PRIMITIVES and not elem[0].isupper():
        raise ValueError(f"struct type names must start with a capital letter: {f.type}")
    if f.is_array and elem == "records":
        raise ValueError("arrays of records are not supported")


def _check_field(spec: MessageSpec, f: FieldSpec, where: str, top: bool) -> None:
    try:
        _check_type(f)
        if f.versions is None:
            raise ValueError('versions must not be "none"')
        if f.nullable is not None and not (f.is_array or f.is_struct or f.type in _NULLABLE_TYPES):
            raise ValueError(f"nullableVersions is not allowed for type {f.type}")
        if f.has_flexible_override and f.type not in ("string", "bytes"):
            raise ValueError("field-level flexibleVersions is only allowed on string and bytes fields")
        if f.flexible is not None and not f.flexible.open_ended:
            raise ValueError(f"field-level flexibleVersions must be open-ended or none, got {f.flexible}")
        if f.map_key and top:
            raise ValueError("mapKey is not allowed on top-level fields")
        if (f.tag is None) != (f.tagged is None):
            raise ValueError("tag and taggedVersions must be given together")
        if f.tagged is not None:
            _check_tagged(spec, f, f.tagged)
        check_default(f)
    except ValueError as e:
        raise SpecError(f"{spec.path}: field {where}: {e}") from None


def _check_tagged(spec: MessageSpec, f: FieldSpec, tagged: Versions) -> None:
    assert f.versions is not None
    if f.tag is not None and f.tag < 0:
        raise ValueError(f"tag must be non-negative, got {f.tag}")
    if not tagged.open_ended:
        raise ValueError(f'taggedVersions must be open-ended ("N+"), got {tagged}')
    if not f.versions.contains_range(tagged):
        raise ValueError(f"taggedVersions {tagged} are not within versions {f.versions}")
    if spec.flexible is None or not spec.flexible.contains_range(tagged):
        raise ValueError(f"taggedVersions {tagged} are not within flexibleVersions {spec.flexible}")
    if f.nullable is not None:
        both = f.nullable.intersect(tagged)
        if both is not None and both != tagged:
            raise ValueError(
                f"nullableVersions {f.nullable} must cover all or none of taggedVersions {tagged}"
            )
    if f.map_key:
        raise ValueError("tagged fields cannot be mapKey")


def _check_struct(spec: MessageSpec, s: StructSpec, top: bool) -> None:
    names: set[str] = set()
    tags: dict[int, str] = {}
    for f in s.fields:
        where = f"{s.name}.{f.name}"
        if not _NAME_RE.match(f.name):
            raise SpecError(f"{spec.path}: field {where}: invalid field name {f.name!r}")
        if f.name.lower() in names:
            raise SpecError(f"{spec.path}: field {where}: duplicate field name {f.name!r} in {s.name}")
        names.add(f.name.lower())
        if snake_attr(f.name) in RESERVED_ATTRS:
            raise SpecError(f"{spec.path}: field {where}: name {f.name!r} clashes with a generated method")
        _check_field(spec, f, where, top)
        if f.tag is not None:
            if f.tag in tags:
                raise SpecError(f"{spec.path}: field {where}: tag {f.tag} is already used by {tags[f.tag]}")
            tags[f.tag] = f.name
    for i in range(len(tags)):
        if i not in tags:
            missing_at = max(tags)
            raise SpecError(
                f"{spec.path}: field {s.name}.{tags[missing_at]}: tags in {s.name} must be contiguous "
                f"from 0; tag {i} is unused"
            )


def _check_header_versions(spec: MessageSpec) -> None:
    """headerVersions (Kafka's HeaderVersions): request/response only; ranges start at 0, are contiguous
    and the last is open-ended."""
    hv = sorted(spec.header_versions or [], key=lambda e: e[0].lo)
    where = f"{spec.path}: headerVersions"
    if spec.type not in ("request", "response"):
        raise SpecError(f"{where}: only allowed on request and response specs")
    if not hv or hv[0][0].lo != 0 or not hv[-1][0].open_ended:
        raise SpecError(f'{where}: ranges must start at 0 and end open-ended ("N+")')
    for (a, _), (b, _) in zip(hv, hv[1:], strict=False):
        if b.lo != a.hi + 1:
            raise SpecError(f"{where}: ranges {a} and {b} are not contiguous")


def validate(spec: MessageSpec) -> None:
    """Raise SpecError on the first rule the spec breaks."""
    if not _NAME_RE.match(spec.name) or not spec.name[0].isupper():
        raise SpecError(f"{spec.path}: name: {spec.name!r} is not a capitalized alphanumeric name")
    if spec.valid is None:
        raise SpecError(f'{spec.path}: validVersions: must not be "none"')
    if spec.valid.open_ended:
        raise SpecError(f"{spec.path}: validVersions: must specify a maximum version, got {spec.valid}")
    if spec.type not in ("request", "response", "header", "data", "metadata"):
        raise SpecError(f"{spec.path}: type: unknown message type {spec.type!r}")
    if spec.type in ("request", "response") and spec.api_key is None:
        raise SpecError(f"{spec.path}: apiKey: required for {spec.type} specs")
    if spec.type == "metadata" and (spec.api_key is None or not 0 <= spec.api_key <= 0x7FFF):
        raise SpecError(f"{spec.path}: apiKey: metadata record specs need an apiKey in 0..32767")
    if spec.header_versions is not None:
        _check_header_versions(spec)
    seen: dict[str, StructSpec] = {}
    for s in spec.all_structs():
        if s.name in RESERVED_STRUCT_NAMES:
            raise SpecError(f"{spec.path}: struct {s.name}: name is reserved by the generated module")
        if s.name in seen and seen[s.name] is not s:
            raise SpecError(f"{spec.path}: struct {s.name}: defined more than once")
        seen[s.name] = s
        _check_struct(spec, s, top=s is spec.struct)
