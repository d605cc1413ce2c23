"""``quorum-state``: the durable election state, one JSON line as Kafka writes it.

Contracts:
1. Writes go to ``quorum-state.tmp``, are fsynced, then renamed over ``quorum-state`` (kraftd.storage.fsio);
   the call returns only once the state is durable.
2. ``data_version`` 1 (kraft.version 1) writes leaderId, leaderEpoch, votedId, votedDirectoryId;
   ``data_version`` 0 (static voters) writes clusterId "", leaderId, leaderEpoch, votedId, appliedOffset 0 and
   currentVoters. Both are read back; any other version or a missing ``data_version`` is MalformedFileError.
3. A missing file reads as None (a freshly formatted node); bytes that are not a UTF-8 JSON object are
   MalformedFileError (never a bare decoding error).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kraftd.storage.errors import MalformedFileError
from kraftd.storage.fsio import atomic_write
from kraftd.storage.uuids import ZERO_UUID, uuid_from_str, uuid_to_str

QUORUM_STATE_FILE = "quorum-state"
UNKNOWN_LEADER_ID = -1
NOT_VOTED = -1


@dataclass(frozen=True, slots=True)
class ElectionStateRecord:
    leader_epoch: int
    leader_id: int = UNKNOWN_LEADER_ID
    voted_id: int = NOT_VOTED
    voted_directory_id: uuid.UUID = ZERO_UUID
    data_version: int = 1
    current_voters: tuple[int, ...] = field(default=())

    def to_json(self) -> str:
        body: dict[str, Any]
        if self.data_version == 1:
            body = {
                "leaderId": self.leader_id,
                "leaderEpoch": self.leader_epoch,
                "votedId": self.voted_id,
                "votedDirectoryId": uuid_to_str(self.voted_directory_id),
            }
        elif self.data_version == 0:
            body = {
                "clusterId": "",
                "leaderId": self.leader_id,
                "leaderEpoch": self.leader_epoch,
                "votedId": self.voted_id,
                "appliedOffset": 0,
                "currentVoters": [{"voterId": v} for v in self.current_voters],
            }
        else:
            raise ValueError(f"quorum-state data_version {self.data_version} is not 0 or 1")
        body["data_version"] = self.data_version
        return json.dumps(body, separators=(",", ":"))


class QuorumStateFile:
    def __init__(self, partition_dir: Path) -> None:
        self.path = partition_dir / QUORUM_STATE_FILE

    def write(self, state: ElectionStateRecord) -> None:
        atomic_write(self.path, (state.to_json() + "\n").encode("utf-8"))

    def read(self) -> ElectionStateRecord | None:
        try:
            with self.path.open("rb") as f:
                raw = f.readline()
        except FileNotFoundError:
            return None
        try:
            obj = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise MalformedFileError(
                f"{self.path}: not UTF-8 text: {exc.reason} at byte {exc.start}"
            ) from None
        except (json.JSONDecodeError, RecursionError) as exc:
            raise MalformedFileError(f"{self.path}: not JSON: {exc}") from None
        if not isinstance(obj, dict):
            raise MalformedFileError(f"{self.path}: expected a JSON object")
        return _from_obj(obj, self.path)


def _int_field(obj: dict[str, Any], key: str, default: int, path: Path) -> int:
    value = obj.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise MalformedFileError(f"{path}: {key} must be an integer, got {value!r}")
    return value


def _from_obj(obj: dict[str, Any], path: Path) -> ElectionStateRecord:
    if "data_version" not in obj:
        raise MalformedFileError(f"{path}: no data_version field")
    version = obj["data_version"]
    if version not in (0, 1) or isinstance(version, bool):
        raise MalformedFileError(f"{path}: unsupported data_version {version!r}; expected 0 or 1")
    voted_dir = ZERO_UUID
    voters: Sequence[int] = ()
    if version == 1:
        raw = obj.get("votedDirectoryId", uuid_to_str(ZERO_UUID))
        try:
            voted_dir = uuid_from_str(str(raw))
        except ValueError as exc:
            raise MalformedFileError(f"{path}: votedDirectoryId: {exc}") from None
    else:
        raw_voters = obj.get("currentVoters") or []
        if not isinstance(raw_voters, list):
            raise MalformedFileError(f"{path}: currentVoters must be a list")
        voters = tuple(_int_field(v, "voterId", -1, path) for v in raw_voters if isinstance(v, dict))
    return ElectionStateRecord(
        leader_epoch=_int_field(obj, "leaderEpoch", -1, path),
        leader_id=_int_field(obj, "leaderId", UNKNOWN_LEADER_ID, path),
        voted_id=_int_field(obj, "votedId", NOT_VOTED, path),
        voted_directory_id=voted_dir,
        data_version=version,
        current_voters=tuple(voters),
    )
