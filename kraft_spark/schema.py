"""The one place that maps generated message classes to Spark types and Python values to rows.

Contracts:
1. Record types are discovered, never listed by hand: every generated class whose ``TYPE`` is ``"metadata"``
   is a metadata record type keyed by its ``API_KEY`` (Kafka's MetadataRecordType id); the control record
   value classes come from :data:`kwire.control.VALUE_CLASSES`. New specs appear here after ``codegen``.
2. A class's Spark struct has one field per ``FIELDS`` entry of any version, named by the snake_case
   attribute, in spec order. Scalar types map as int8→byte, int16→short, int32/uint16→int,
   int64/uint32→long, float64→double, bool→boolean, string/uuid→string (uuid in Kafka's base64url form),
   bytes/records→binary; ``[]T`` → array; a struct type → the nested struct.
3. :func:`to_value` turns a decoded object into the nested dict/list form matching that struct (for Arrow);
   :func:`to_json` renders Kafka's camelCase JSON view of the same object, exactly what kafka-dump-log prints:
   Kafka's generated JsonConverter writes a field present in the version always, except a tagged one, which
   it writes only when it differs from the spec's default.
4. The row's ``record`` column is a struct with one nullable field per record type (see
   :func:`record_union_fields`); exactly one of them is set on a decoded row.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import re
import uuid
from functools import cache
from typing import Any

import generated.messages as generated_messages
from kwire.codec import FieldInfo
from kwire.control import VALUE_CLASSES, ControlRecordType, EndTransactionMarker

SCALARS = {
    "int8": "byte",
    "int16": "short",
    "int32": "int",
    "uint16": "int",
    "int64": "long",
    "uint32": "long",
    "float64": "double",
    "bool": "boolean",
    "string": "string",
    "uuid": "string",
    "bytes": "binary",
    "records": "binary",
}

# Kafka's kafka-dump-log names for control types (its ControlRecordType names, title-cased).
CONTROL_NAMES = {
    ControlRecordType.ABORT: "EndTxnMarker",
    ControlRecordType.COMMIT: "EndTxnMarker",
    ControlRecordType.LEADER_CHANGE: "LeaderChange",
    ControlRecordType.SNAPSHOT_HEADER: "SnapshotHeader",
    ControlRecordType.SNAPSHOT_FOOTER: "SnapshotFooter",
    ControlRecordType.KRAFT_VERSION: "KRaftVersion",
    ControlRecordType.KRAFT_VOTERS: "KRaftVoters",
}


@cache
def metadata_classes() -> dict[int, type]:
    """Metadata record classes by api key (contract 1)."""
    out: dict[int, type] = {}
    for cls in generated_messages.ALL_CLASSES:
        if getattr(cls, "TYPE", None) == "metadata" and getattr(cls, "API_KEY", None) is not None:
            out[int(cls.API_KEY)] = cls  # type: ignore[attr-defined]
    return out


@cache
def snake(name: str) -> str:
    name = name.replace("KRaft", "Kraft")
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


def upper_snake(name: str) -> str:
    """Kafka's MetadataRecordType constant for a record class name (FeatureLevelRecord → FEATURE_LEVEL_RECORD)."""
    return snake(name).upper()


def _fields(cls: type) -> tuple[FieldInfo, ...]:
    return tuple(getattr(cls, "FIELDS", ()))


def _is_struct(cls: type) -> bool:
    """A generated class, including one with no fields at all (NoOpRecord)."""
    return hasattr(cls, "FIELDS")


# Parquet cannot store a struct with no columns, so a record type without fields (NoOpRecord) gets this one
# boolean column, true on each of its rows.
EMPTY_STRUCT_FIELD = "present"


def _field_type(info: FieldInfo) -> Any:
    from pyspark.sql import types as T

    t = info.type
    if t.startswith("[]"):
        inner = t[2:]
        element = struct_type(info.struct) if info.struct is not None else _scalar(inner)
        return T.ArrayType(element, True)
    if info.struct is not None:
        return struct_type(info.struct)
    return _scalar(t)


def _scalar(t: str) -> Any:
    name = SCALARS.get(t)
    if name is None:
        raise ValueError(f"no Spark type for spec type {t!r}")
    return spark_scalar(name)


def spark_scalar(name: str) -> Any:
    """The Spark type of a simple type name (byte, short, int, long, double, boolean, string, binary)."""
    from pyspark.sql import types as T

    return {
        "byte": T.ByteType(),
        "short": T.ShortType(),
        "int": T.IntegerType(),
        "long": T.LongType(),
        "double": T.DoubleType(),
        "boolean": T.BooleanType(),
        "string": T.StringType(),
        "binary": T.BinaryType(),
    }[name]


@cache
def struct_type(cls: type) -> Any:
    """The Spark StructType of a generated class (contract 2)."""
    from pyspark.sql import types as T

    if cls is EndTransactionMarker:
        return T.StructType(
            [T.StructField("version", T.ShortType()), T.StructField("coordinator_epoch", T.IntegerType())]
        )
    if not _fields(cls):
        return T.StructType([T.StructField(EMPTY_STRUCT_FIELD, T.BooleanType(), True)])
    return T.StructType([T.StructField(f.attr, _field_type(f), True) for f in _fields(cls)])


def record_union_fields() -> list[tuple[str, type]]:
    """(column name, class) of every record type, control types first then metadata by api key."""
    seen: dict[str, type] = {}
    for kind, cls in VALUE_CLASSES.items():
        seen.setdefault(snake(CONTROL_NAMES[kind]), cls)
    for _, cls in sorted(metadata_classes().items()):
        seen.setdefault(snake(cls.__name__), cls)
    return list(seen.items())


def uuid_text(u: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(u.bytes).decode("ascii").rstrip("=")


def _present(info: FieldInfo, version: int) -> bool:
    return info.versions[0] <= version <= info.versions[1]


def _tagged(info: FieldInfo, version: int) -> bool:
    tv = info.tagged_versions
    return tv is not None and tv[0] <= version <= tv[1]


_DEFAULTS: dict[type, dict[str, Any]] = {}


def _defaults(cls: type) -> dict[str, Any]:
    """The spec default of each field (what the generated dataclass defaults to)."""
    out = _DEFAULTS.get(cls)
    if out is None:
        out = {}
        for f in dataclasses.fields(cls):
            if f.default is not dataclasses.MISSING:
                out[f.name] = f.default
            elif f.default_factory is not dataclasses.MISSING:
                out[f.name] = f.default_factory()
        _DEFAULTS[cls] = out
    return out


def to_value(obj: Any, version: int = 32767) -> Any:
    """Nested dict/list form of a decoded object; fields absent at ``version`` are null (contract 3)."""
    if isinstance(obj, EndTransactionMarker):
        return {"version": obj.version, "coordinator_epoch": obj.coordinator_epoch}
    infos = _fields(type(obj))
    if not _is_struct(type(obj)):
        return _scalar_value(obj)
    if not infos:
        return {EMPTY_STRUCT_FIELD: True}
    return {
        f.attr: _convert(getattr(obj, f.attr, None), version) if _present(f, version) else None for f in infos
    }


def _convert(v: Any, version: int) -> Any:
    if isinstance(v, list):
        return [_convert(x, version) for x in v]
    if _is_struct(type(v)) or isinstance(v, EndTransactionMarker):
        return to_value(v, version)
    return _scalar_value(v)


def _scalar_value(v: Any) -> Any:
    if isinstance(v, uuid.UUID):
        return uuid_text(v)
    if isinstance(v, memoryview | bytearray):
        return bytes(v)
    return v


def _camel(name: str) -> str:
    return name[:1].lower() + name[1:]


def _jsonable(obj: Any, version: int) -> Any:
    if isinstance(obj, list):
        return [_jsonable(x, version) for x in obj]
    if isinstance(obj, EndTransactionMarker):
        return {"version": obj.version, "coordinatorEpoch": obj.coordinator_epoch}
    infos = _fields(type(obj))
    if _is_struct(type(obj)):
        defaults = _defaults(type(obj))
        return {
            _camel(f.name): _jsonable(getattr(obj, f.attr, None), version)
            for f in infos
            if _present(f, version)
            and not (_tagged(f, version) and getattr(obj, f.attr, None) == defaults.get(f.attr))
        }
    if isinstance(obj, uuid.UUID):
        return uuid_text(obj)
    if isinstance(obj, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(obj)).decode("ascii")
    return obj


def to_json(obj: Any, version: int = 32767) -> str:
    """Kafka-style camelCase JSON of a decoded object, fields present at ``version`` only (contract 3)."""
    return _ENCODE(_jsonable(obj, version))


_ENCODE = json.JSONEncoder(separators=(",", ":")).encode  # json.dumps builds an encoder per call
