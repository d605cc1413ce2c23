"""Translate between our generated objects and kafka-python 3.0.12's, field by field.

kafka-python is an independent implementation of the same Kafka specs, so it serves as an oracle: an object we encode
must decode there to the same field values, and the reverse. The bridge walks our ``FIELDS`` metadata (never
kafka-python's) and reads or writes kafka-python attributes by its own naming rule, so a naming or type mismatch in
either implementation shows up as a failed comparison rather than being papered over.

Known kafka-python behaviour worked around here, not copied:
1. It forces every message's lowest version to 0; we only compare versions both sides define.
2. It drops unknown tagged fields; objects sent through it carry none.
3. Its names put an underscore before every capital ("KRaftVersion" -> "k_raft_version").
4. It renames the authorized-operations int32 fields to ``authorized_operations`` and exposes them as a set of bit
   positions (None for Kafka's "not requested" value INT32_MIN); the bridge converts both ways.
5. It writes every tagged field passed to its constructor, default or not; Kafka writes only non-default ones,
   so the bridge passes tagged fields only when they differ from their default.
6. It reads Kafka's ZERO_UUID as None; for a uuid field (never nullable in Kafka) that means UUID(int=0).
7. It reports an absent non-nullable tagged struct as None; Kafka (and we) read it as the struct's defaults.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

from kafka.protocol.admin.cluster import (
    DescribeClusterRequest,
    DescribeClusterResponse,
    DescribeQuorumRequest,
    DescribeQuorumResponse,
    UpdateFeaturesRequest,
    UpdateFeaturesResponse,
)
from kafka.protocol.consumer.fetch import FetchRequest, FetchResponse
from kafka.protocol.metadata import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    MetadataRequest,
    MetadataResponse,
)

# Our spec name -> kafka-python class, for every message kafka-python 3.0.12 carries that we also define.
KP_CLASSES: dict[str, Any] = {
    "ApiVersionsRequest": ApiVersionsRequest,
    "ApiVersionsResponse": ApiVersionsResponse,
    "FetchRequest": FetchRequest,
    "FetchResponse": FetchResponse,
    "DescribeQuorumRequest": DescribeQuorumRequest,
    "DescribeQuorumResponse": DescribeQuorumResponse,
    "DescribeClusterRequest": DescribeClusterRequest,
    "DescribeClusterResponse": DescribeClusterResponse,
    "MetadataRequest": MetadataRequest,
    "MetadataResponse": MetadataResponse,
    "UpdateFeaturesRequest": UpdateFeaturesRequest,
    "UpdateFeaturesResponse": UpdateFeaturesResponse,
}


_BITFIELDS = {"ClusterAuthorizedOperations", "TopicAuthorizedOperations"}
_INT32_MIN = -(2**31)


def kp_attr(spec_name: str) -> str:
    if spec_name in _BITFIELDS:
        return "authorized_operations"
    return re.sub(r"(?<!^)(?=[A-Z])", "_", spec_name).lower()


def _to_bits(value: int) -> set[int] | None:
    if value == _INT32_MIN:
        return None
    return {bit for bit in range(32) if (value & 0xFFFFFFFF) >> bit & 1}


def _from_bits(bits: set[int] | None) -> int:
    if bits is None:
        return _INT32_MIN
    raw = sum(1 << bit for bit in bits)
    return raw - (1 << 32) if raw >= 1 << 31 else raw


def _in_version(field: Any, version: int) -> bool:
    lo, hi = field.versions
    return bool(lo <= version <= hi)


def _struct_type(field: Any) -> str:
    t: str = field.type
    return t[2:] if t.startswith("[]") else t


def _default(field: Any) -> Any:
    if field.type.startswith("[]"):
        return []
    if field.struct is not None:
        return field.struct()
    return field.default


def to_kp(obj: Any, kp_cls: Any, version: int) -> Any:
    """Build the kafka-python object holding the same field values as ``obj`` at ``version``."""
    kwargs: dict[str, Any] = {}
    for field in type(obj).FIELDS:
        if not _in_version(field, version):
            continue
        value = getattr(obj, field.attr)
        if field.tag is not None and value == _default(field):
            continue
        if field.struct is not None and value is not None:
            sub = getattr(kp_cls, _struct_type(field))
            if field.type.startswith("[]"):
                value = [to_kp(item, sub, version) for item in value]
            else:
                value = to_kp(value, sub, version)
        elif field.name in _BITFIELDS:
            value = _to_bits(value)
        kwargs[kp_attr(field.name)] = value
    return kp_cls(version=version, **kwargs)


def from_kp(kp_obj: Any, cls: Any, version: int) -> Any:
    """Build our object holding the field values kafka-python decoded at ``version``."""
    kwargs: dict[str, Any] = {}
    for field in cls.FIELDS:
        if not _in_version(field, version):
            continue
        value = getattr(kp_obj, kp_attr(field.name))
        nullable = field.nullable_versions is not None and field.nullable_versions[0] <= version
        if value is None and field.tag is not None and field.struct is not None and not nullable:
            value = [] if field.type.startswith("[]") else field.struct()
        if field.struct is not None and value is not None:
            if field.type.startswith("[]"):
                value = [from_kp(item, field.struct, version) for item in value]
            else:
                value = from_kp(value, field.struct, version)
        elif field.name in _BITFIELDS:
            value = _from_bits(value)
        elif field.type == "uuid" and value is None:
            value = uuid.UUID(int=0)
        elif field.type == "records" and value is not None and not isinstance(value, bytes):
            value = bytes(value)
        kwargs[field.attr] = value
    return cls(**kwargs)


def as_plain(obj: Any, version: int) -> dict[str, Any]:
    """Our object as nested dicts of the fields present at ``version`` (for readable assertion diffs)."""
    out: dict[str, Any] = {}
    for field in type(obj).FIELDS:
        if not _in_version(field, version):
            continue
        value = getattr(obj, field.attr)
        if field.struct is not None and value is not None:
            if field.type.startswith("[]"):
                value = [as_plain(item, version) for item in value]
            else:
                value = as_plain(value, version)
        out[field.name] = value
    return out
