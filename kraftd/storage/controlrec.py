"""Control records as storage and the tools see them (the one adapter to the control-record format).

Contracts:
1. A control record key is 4 bytes: int16 key version (0) and int16 type; :func:`control_type` reads it and
   returns None for a malformed key.
2. Control record values are the generated data classes serialized at schema version 0 (Kafka's on-disk
   convention, LeaderChangeMessage included).
3. :func:`describe_control_record` never raises: an undecodable value is described as such.
4. The bootstrap snapshot layout is kraftd.storage.bootstrap contract 2.
"""

from __future__ import annotations

import dataclasses
import struct
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from generated.kraft_version_record import KRaftVersionRecord
from generated.leader_change_message import LeaderChangeMessage
from generated.snapshot_footer_record import SnapshotFooterRecord
from generated.snapshot_header_record import SnapshotHeaderRecord
from generated.voters_record import Endpoint as VoterEndpoint
from generated.voters_record import KRaftVersionFeature, Voter, VotersRecord
from kraftd.config import Endpoint
from kraftd.storage.errors import StorageError
from kraftd.storage.uuids import uuid_to_str
from kwire.batches import iter_batches
from kwire.errors import KraftError
from kwire.records import Record, build_batch

if TYPE_CHECKING:
    from kraftd.storage.bootstrap import BootstrapVoter

LEADER_CHANGE = 2
SNAPSHOT_HEADER = 3
SNAPSHOT_FOOTER = 4
KRAFT_VERSION = 5
KRAFT_VOTERS = 6

CONTROL_TYPE_NAMES = {
    0: "Abort",
    1: "Commit",
    LEADER_CHANGE: "LeaderChange",
    SNAPSHOT_HEADER: "SnapshotHeader",
    SNAPSHOT_FOOTER: "SnapshotFooter",
    KRAFT_VERSION: "KRaftVersion",
    KRAFT_VOTERS: "KRaftVoters",
}

_VALUE_CLASSES: dict[int, Any] = {
    LEADER_CHANGE: LeaderChangeMessage,
    SNAPSHOT_HEADER: SnapshotHeaderRecord,
    SNAPSHOT_FOOTER: SnapshotFooterRecord,
    KRAFT_VERSION: KRaftVersionRecord,
    KRAFT_VOTERS: VotersRecord,
}

KRAFT_VERSION_MAX = 1


def control_key(ctype: int) -> bytes:
    return struct.pack(">hh", 0, ctype)


def control_type(key: bytes | None) -> int | None:
    if key is None or len(key) < 4:
        return None
    version, ctype = struct.unpack_from(">hh", key, 0)
    return None if version < 0 else int(ctype)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def _render(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, uuid.UUID):
        return f'"{uuid_to_str(value)}"'
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ",".join(_render(v) for v in value) + "]"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        parts = [
            f'"{_camel(f.name)}":{_render(getattr(value, f.name))}'
            for f in dataclasses.fields(value)
            if f.name != "unknown_tagged_fields"
        ]
        return "{" + ",".join(parts) + "}"
    return str(value)


def decode_control_value(ctype: int, value: bytes) -> Any:
    """The generated object for a known control type (contract 2); KraftError for bad bytes."""
    cls = _VALUE_CLASSES.get(ctype)
    if cls is None:
        raise StorageError(f"control type {ctype} has no known value schema")
    return cls.decode(value, 0)


def describe_control_record(key: bytes | None, value: bytes | None) -> str:
    ctype = control_type(key)
    if ctype is None:
        return "controlType: invalid key"
    name = CONTROL_TYPE_NAMES.get(ctype, f"Unknown({ctype})")
    if value is None:
        return f"{name}: null"
    try:
        return f"{name}: {_render(decode_control_value(ctype, value))}"
    except KraftError as exc:
        return f"{name}: undecodable value ({exc}) {value.hex()}"


def _control_batch(base_offset: int, now_ms: int, values: Sequence[tuple[int, bytes]]) -> bytes:
    records = [Record(i, 0, control_key(t), v) for i, (t, v) in enumerate(values)]
    return build_batch(
        records, base_offset=base_offset, partition_leader_epoch=0, base_timestamp=now_ms, is_control=True
    )


def bootstrap_snapshot_bytes(voters: Sequence[BootstrapVoter], *, now_ms: int) -> bytes:
    voters_record = VotersRecord(
        version=0,
        voters=[
            Voter(
                voter_id=v.node_id,
                voter_directory_id=v.directory_id,
                endpoints=[VoterEndpoint(name=e.name, host=e.host, port=e.port) for e in v.endpoints],
                kraft_version_feature=KRaftVersionFeature(0, KRAFT_VERSION_MAX),
            )
            for v in voters
        ],
    )
    first = _control_batch(
        0,
        now_ms,
        [
            (SNAPSHOT_HEADER, SnapshotHeaderRecord(version=0, last_contained_log_timestamp=now_ms).encode(0)),
            (KRAFT_VERSION, KRaftVersionRecord(version=0, kraft_version=1).encode(0)),
            (KRAFT_VOTERS, voters_record.encode(0)),
        ],
    )
    footer = _control_batch(3, now_ms, [(SNAPSHOT_FOOTER, SnapshotFooterRecord(version=0).encode(0))])
    return first + footer


def read_bootstrap_snapshot(data: bytes, where: str) -> tuple[int, list[BootstrapVoter]]:
    from kraftd.storage.bootstrap import BootstrapVoter

    kraft_version = 0
    voters: list[BootstrapVoter] = []
    saw_footer = False
    try:
        for view in iter_batches(data):
            batch = view.decode()
            if not batch.is_control:
                continue
            for rec in batch.records:
                ctype = control_type(rec.key)
                if ctype == KRAFT_VERSION and rec.value is not None:
                    kraft_version = KRaftVersionRecord.decode(rec.value, 0).kraft_version
                elif ctype == KRAFT_VOTERS and rec.value is not None:
                    vr = VotersRecord.decode(rec.value, 0)
                    voters = [
                        BootstrapVoter(
                            v.voter_id,
                            v.voter_directory_id,
                            tuple(Endpoint(e.name, e.host, e.port) for e in v.endpoints),
                        )
                        for v in vr.voters
                    ]
                elif ctype == SNAPSHOT_FOOTER:
                    saw_footer = True
    except KraftError as exc:
        raise StorageError(f"{where}: corrupt bootstrap checkpoint: {exc}") from None
    if not saw_footer:
        raise StorageError(f"{where}: bootstrap checkpoint has no SnapshotFooter (incomplete)")
    return kraft_version, voters
