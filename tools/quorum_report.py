"""Text reports of a DescribeQuorum answer, laid out exactly as Kafka's kafka-metadata-quorum prints them.

Contracts:
1. ``describe --status`` prints eight ``Key:<padding>value`` lines (values start in column 25): ClusterId,
   LeaderId, LeaderEpoch, HighWatermark, MaxFollowerLag, MaxFollowerLagTimeMs, CurrentVoters, CurrentObservers.
   Replicas render as ``{"id": N, "directoryId": "...", "endpoints": ["NAME://host:port", ...]}``; the
   directoryId is left out when it is the zero uuid and endpoints when none are known.
2. MaxFollowerLag is the leader's log end offset minus the smallest voter log end offset (the first such voter
   in response order); MaxFollowerLagTimeMs is 0 when that voter is the leader, else the difference of the two
   last-caught-up timestamps, or -1 when either is unknown (-1 on the wire).
3. ``describe --replication`` prints the columns NodeId, DirectoryId, LogEndOffset, Lag, LastFetchTimestamp,
   LastCaughtUpTimestamp, Status; rows are the leader, the other voters ("Follower"), then observers
   ("Observer"); every cell is left-aligned and padded to its column's width and followed by a tab.
"""

from __future__ import annotations

import time
import uuid

from kraftd.storage.uuids import ZERO_UUID, uuid_to_str
from kwire.errors import KraftError
from kwire.quorum_client import QuorumInfo, Replica


class ReportError(KraftError):
    """The quorum description cannot be reported (e.g. the leader is not among the voters)."""


def _dir_text(directory_id: uuid.UUID) -> str:
    return uuid_to_str(directory_id)


def _replica_json(info: QuorumInfo, r: Replica) -> str:
    out = f'{{"id": {r.replica_id}'
    if r.directory_id != ZERO_UUID:
        out += f', "directoryId": "{_dir_text(r.directory_id)}"'
    eps = info.endpoints.get(r.replica_id, ())
    if eps:
        out += ', "endpoints": [' + ", ".join(f'"{e}"' for e in eps) + "]"
    return out + "}"


def _leader(info: QuorumInfo) -> Replica:
    for v in info.voters:
        if v.replica_id == info.leader_id:
            return v
    raise ReportError(f"the leader {info.leader_id} is not among the voters; no leader is known yet")


def status_report(cluster_id: str, info: QuorumInfo) -> str:
    """Contract 1 and 2."""
    leader = _leader(info)
    lagger = min(info.voters, key=lambda v: v.log_end_offset)
    max_lag = leader.log_end_offset - lagger.log_end_offset
    if lagger is leader:
        lag_ms = 0
    elif leader.last_caught_up_timestamp != -1 and lagger.last_caught_up_timestamp != -1:
        lag_ms = leader.last_caught_up_timestamp - lagger.last_caught_up_timestamp
    else:
        lag_ms = -1
    rows = [
        ("ClusterId", cluster_id),
        ("LeaderId", str(info.leader_id)),
        ("LeaderEpoch", str(info.leader_epoch)),
        ("HighWatermark", str(info.high_watermark)),
        ("MaxFollowerLag", str(max_lag)),
        ("MaxFollowerLagTimeMs", str(lag_ms)),
        ("CurrentVoters", "[" + ", ".join(_replica_json(info, v) for v in info.voters) + "]"),
        ("CurrentObservers", "[" + ", ".join(_replica_json(info, o) for o in info.observers) + "]"),
    ]
    return "".join(f"{(key + ':').ljust(24)}{value}\n" for key, value in rows)


def _timestamp(ts: int, human: bool, now_ms: int) -> str:
    if ts == -1:
        return "-1"
    if not human:
        return str(ts)
    if not 0 < ts <= now_ms:
        raise ReportError(
            f"Error while computing relative time, possible drift in system clock. now={now_ms} ts={ts}"
        )
    return f"{now_ms - ts} ms ago"


def replication_report(info: QuorumInfo, *, human_readable: bool = False, now_ms: int | None = None) -> str:
    """Contract 3."""
    now = now_ms if now_ms is not None else int(time.time() * 1000)
    leader = _leader(info)
    groups = [
        ([leader], "Leader"),
        ([v for v in info.voters if v.replica_id != info.leader_id], "Follower"),
        (list(info.observers), "Observer"),
    ]
    rows: list[list[str]] = []
    for replicas, status in groups:
        for r in replicas:
            rows.append(
                [
                    str(r.replica_id),
                    _dir_text(r.directory_id),
                    str(r.log_end_offset),
                    str(leader.log_end_offset - r.log_end_offset),
                    _timestamp(r.last_fetch_timestamp, human_readable, now),
                    _timestamp(r.last_caught_up_timestamp, human_readable, now),
                    status,
                ]
            )
    headers = [
        "NodeId",
        "DirectoryId",
        "LogEndOffset",
        "Lag",
        "LastFetchTimestamp",
        "LastCaughtUpTimestamp",
        "Status",
    ]
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h) for i, h in enumerate(headers)]
    lines = ["".join(cell.ljust(widths[i]) + "\t" for i, cell in enumerate(row)) for row in [headers, *rows]]
    return "\n".join(lines) + "\n"
