"""Record batches inside Fetch / FetchSnapshot payloads, decoded for display.

Contracts:
1. Every whole batch is listed with its offsets, partition leader epoch, CRC validity and records; a batch
   whose CRC fails is listed but its records are not decoded; a torn tail (a Fetch cut at MaxBytes, or a
   snapshot chunk) is reported as ``truncated_tail`` bytes, not as an error.
2. Control records are decoded with their generated classes (LeaderChange, SnapshotHeader/Footer,
   KRaftVersion, KRaftVoters). Metadata records are named from their frame's api key (the KRaft metadata
   record types); their body is decoded when this build has a generated class of that name, else shown as hex.
"""

from __future__ import annotations

from typing import Any

from generated.messages import by_name
from kwire.batches import StopReason, iter_batches
from kwire.control import decode_control_record
from kwire.errors import KraftError
from kwire.metadata_frame import decode_metadata_frame
from tools.conformance.wire import to_json

METADATA_RECORD_TYPES = {
    0: "RegisterBrokerRecord",
    1: "UnregisterBrokerRecord",
    2: "TopicRecord",
    3: "PartitionRecord",
    4: "ConfigRecord",
    5: "PartitionChangeRecord",
    7: "FenceBrokerRecord",
    8: "UnfenceBrokerRecord",
    9: "RemoveTopicRecord",
    10: "DelegationTokenRecord",
    11: "UserScramCredentialRecord",
    12: "FeatureLevelRecord",
    14: "ClientQuotaRecord",
    15: "ProducerIdsRecord",
    17: "BrokerRegistrationChangeRecord",
    18: "AccessControlEntryRecord",
    19: "RemoveAccessControlEntryRecord",
    20: "NoOpRecord",
    21: "ZkMigrationStateRecord",
    22: "RemoveUserScramCredentialRecord",
    23: "BeginTransactionRecord",
    24: "EndTransactionRecord",
    25: "AbortTransactionRecord",
    26: "RemoveDelegationTokenRecord",
    27: "RegisterControllerRecord",
    28: "ClearElrRecord",
}


def _metadata_record(value: bytes) -> dict[str, Any]:
    try:
        api_key, version, body = decode_metadata_frame(value)
    except KraftError as exc:
        return {"error": f"not a metadata record frame: {exc}", "value": to_json(value)}
    name = METADATA_RECORD_TYPES.get(api_key, f"metadata record type {api_key}")
    out: dict[str, Any] = {"type": name, "api_key": api_key, "version": version}
    try:
        cls: Any = by_name(name)
    except KeyError:
        out["value"] = to_json(bytes(body))
        return out
    try:
        out["value"] = to_json(cls.decode(body, version))
    except KraftError as exc:
        out["error"] = f"{name} v{version} does not decode: {exc}"
        out["value"] = to_json(bytes(body))
    return out


def decode_batches(buf: bytes) -> dict[str, Any]:
    """Contract 1."""
    batches: list[dict[str, Any]] = []
    it = iter_batches(buf, verify_crc=True, strict=False)
    for view in it:
        entry: dict[str, Any] = {
            "base_offset": view.base_offset,
            "last_offset": view.last_offset,
            "partition_leader_epoch": view.partition_leader_epoch,
            "control": view.is_control,
        }
        try:
            batch = view.decode(verify_crc=False)
        except KraftError as exc:
            entry["error"] = str(exc)
            batches.append(entry)
            continue
        records: list[dict[str, Any]] = []
        for rec in batch.records:
            offset = batch.offset_of(rec)
            if batch.is_control:
                try:
                    decoded = decode_control_record(rec)
                except KraftError as exc:
                    records.append({"offset": offset, "error": str(exc)})
                    continue
                if decoded is None:
                    records.append({"offset": offset, "control": "unknown", "key": to_json(rec.key or b"")})
                else:
                    records.append(
                        {"offset": offset, "control": decoded[0].name, "value": to_json(decoded[1])}
                    )
            elif rec.value is None:
                records.append({"offset": offset, "value": None})
            else:
                records.append({"offset": offset, **_metadata_record(bytes(rec.value))})
        entry["records"] = records
        batches.append(entry)
    out: dict[str, Any] = {"batches": batches}
    if it.stop is StopReason.TRUNCATED:
        out["truncated_tail"] = len(buf) - it.valid_end
    elif it.stop is StopReason.CORRUPT:
        out["error"] = f"corrupt batch at byte {it.valid_end}: {it.error}"
    return out
