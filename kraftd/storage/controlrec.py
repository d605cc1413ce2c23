"""Control records as storage and the tools see them: the one adapter to kwire.control.

Contracts:
1. Control record keys and values follow kwire.control (key = int16 version 0 + int16 type; values are the
   generated data classes at version 0).
2. :func:`describe_control_record` never raises: an undecodable record is described as such.
3. The bootstrap snapshot layout is kraftd.storage.bootstrap contract 2.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from generated.kraft_version_record import KRaftVersionRecord
from generated.snapshot_footer_record import SnapshotFooterRecord
from generated.snapshot_header_record import SnapshotHeaderRecord
from generated.voters_record import Endpoint as VoterEndpoint
from generated.voters_record import KRaftVersionFeature, Voter, VotersRecord
from kraftd.config import Endpoint
from kraftd.storage.errors import StorageError
from kraftd.storage.uuids import uuid_to_str
from kwire.batches import iter_batches
from kwire.control import ControlRecordType, build_control_batch, control_key, decode_control_record
from kwire.errors import KraftError
from kwire.records import Record


@dataclass(frozen=True, slots=True)
class BootstrapVoter:
    """A voter of the bootstrap checkpoint (kraftd.storage.bootstrap re-exports it)."""

    node_id: int
    directory_id: uuid.UUID
    endpoints: tuple[Endpoint, ...]


__all__ = ["control_key", "describe_control_record", "bootstrap_snapshot_bytes", "read_bootstrap_snapshot"]

# Kafka's kafka-dump-log names for the control types.
_NAMES = {
    ControlRecordType.LEADER_CHANGE: "LeaderChange",
    ControlRecordType.SNAPSHOT_HEADER: "SnapshotHeader",
    ControlRecordType.SNAPSHOT_FOOTER: "SnapshotFooter",
    ControlRecordType.KRAFT_VERSION: "KRaftVersion",
    ControlRecordType.KRAFT_VOTERS: "KRaftVoters",
}

KRAFT_VERSION_MAX = 1


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
        # Only the fields that exist at schema version 0, the version control records are stored at.
        infos = getattr(type(value), "FIELDS", ())
        attrs = [f.attr for f in infos if f.versions[0] <= 0 <= f.versions[1]] or [
            f.name for f in dataclasses.fields(value) if f.name != "unknown_tagged_fields"
        ]
        return "{" + ",".join(f'"{_camel(a)}":{_render(getattr(value, a))}' for a in attrs) + "}"
    return str(value)


def describe_control_record(key: bytes | None, value: bytes | None) -> str:
    try:
        decoded = decode_control_record(Record(0, 0, key, value))
    except KraftError as exc:
        return f"undecodable control record ({exc})"
    if decoded is None:
        return f"unknown control type: {(value or b'').hex()}"
    kind, message = decoded
    return f"{_NAMES.get(kind, kind.name.title())}: {_render(message)}"


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
    first = build_control_batch(
        [
            (
                ControlRecordType.SNAPSHOT_HEADER,
                SnapshotHeaderRecord(version=0, last_contained_log_timestamp=now_ms),
            ),
            (ControlRecordType.KRAFT_VERSION, KRaftVersionRecord(version=0, kraft_version=1)),
            (ControlRecordType.KRAFT_VOTERS, voters_record),
        ],
        base_offset=0,
        partition_leader_epoch=0,
        timestamp=now_ms,
    )
    footer = build_control_batch(
        [(ControlRecordType.SNAPSHOT_FOOTER, SnapshotFooterRecord(version=0))],
        base_offset=3,
        partition_leader_epoch=0,
        timestamp=now_ms,
    )
    return first + footer


def read_bootstrap_snapshot(data: bytes, where: str) -> tuple[int, list[BootstrapVoter]]:
    kraft_version = 0
    voters: list[BootstrapVoter] = []
    saw_footer = False
    try:
        for view in iter_batches(data):
            batch = view.decode()
            if not batch.is_control:
                continue
            for rec in batch.records:
                decoded = decode_control_record(rec)
                if decoded is None:
                    continue
                kind, message = decoded
                if kind == ControlRecordType.KRAFT_VERSION:
                    kraft_version = message.kraft_version
                elif kind == ControlRecordType.KRAFT_VOTERS:
                    voters = [
                        BootstrapVoter(
                            v.voter_id,
                            v.voter_directory_id,
                            tuple(Endpoint(e.name, e.host, e.port) for e in v.endpoints),
                        )
                        for v in message.voters
                    ]
                elif kind == ControlRecordType.SNAPSHOT_FOOTER:
                    saw_footer = True
    except KraftError as exc:
        raise StorageError(f"{where}: corrupt bootstrap checkpoint: {exc}") from None
    if not saw_footer:
        raise StorageError(f"{where}: bootstrap checkpoint has no SnapshotFooter (incomplete)")
    return kraft_version, voters
