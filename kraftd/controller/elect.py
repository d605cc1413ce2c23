"""ElectLeaders (43) and the periodic preferred-leader rebalance, as pure functions of the latest image.

Contracts (Kafka 4.3.1 ReplicationControlManager.electLeaders / maybeBalancePartitionLeaders):
1. Per requested partition: unknown topic or partition -> UNKNOWN_TOPIC_OR_PARTITION; PREFERRED when the leader
   already is the first replica, or UNCLEAN when the partition has a leader -> ELECTION_NOT_NEEDED; otherwise the
   change of kraftd.controller.change (contract 2) with that election; when it changes nothing ->
   PREFERRED_LEADER_NOT_AVAILABLE (preferred) or ELIGIBLE_LEADERS_NOT_AVAILABLE (unclean). Errors carry Kafka's
   default message for the code; success carries none.
2. A null topic list means every partition of every topic (topics in name order); ELECTION_NOT_NEEDED results
   are then left out, the topic entry stays (possibly empty).
3. Rebalance (``auto.leader.rebalance.enable``, every ``leader.imbalance.check.interval.seconds``): every
   partition whose leader is not its first replica gets a PREFERRED election; the changes that move
   leadership to the first replica are written, at most :data:`MAX_ELECTIONS` per round.
"""

from __future__ import annotations

from typing import Any

from generated.elect_leaders_request import ElectLeadersRequest
from kraftd.controller import change
from kraftd.controller.image import MetadataImage
from kwire.errors import ErrorCode

MAX_ELECTIONS = 1000  # Kafka's per-round bound on balancing elections
MESSAGES = {
    ErrorCode.ELECTION_NOT_NEEDED: "Leader election not needed for topic partition.",
    ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE: "The preferred leader was not available.",
    ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE: "Eligible topic partition leaders are not available.",
}

Result = tuple[str, list[tuple[int, ErrorCode, str | None]]]


def _elect_one(
    image: MetadataImage, topic: str, pid: int, election: int, records: list[Any]
) -> tuple[ErrorCode, str | None]:
    tid = image.topic_ids.get(topic)
    p = image.topics[tid].partitions.get(pid) if tid is not None else None
    if tid is None or p is None:
        what = f"No such topic as {topic}" if tid is None else f"No such partition as {topic}-{pid}"
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, what
    if (election == change.PREFERRED and p.replicas and p.leader == p.replicas[0]) or (
        election == change.UNCLEAN and p.leader != change.NO_LEADER
    ):
        return ErrorCode.ELECTION_NOT_NEEDED, MESSAGES[ErrorCode.ELECTION_NOT_NEEDED]
    record = change.build(image, tid, pid, p, election=election)
    if record is None:
        code = (
            ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
            if election == change.PREFERRED
            else ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE
        )
        return code, MESSAGES[code]
    records.append(record)
    return ErrorCode.NONE, None


def elect_leaders(image: MetadataImage, req: ElectLeadersRequest) -> tuple[list[Any], list[Result]]:
    """Contracts 1 and 2: (records, (topic, [(partition, error, message)]) per topic)."""
    election = change.UNCLEAN if req.election_type == change.UNCLEAN else change.PREFERRED
    records: list[Any] = []
    results: list[Result] = []
    if req.topic_partitions is None:
        for name in sorted(image.topic_ids):
            parts: list[tuple[int, ErrorCode, str | None]] = []
            for pid in sorted(image.topics[image.topic_ids[name]].partitions):
                code, msg = _elect_one(image, name, pid, election, records)
                if code != ErrorCode.ELECTION_NOT_NEEDED:
                    parts.append((pid, code, msg))
            results.append((name, parts))
        return records, results
    for t in req.topic_partitions:
        parts = []
        for pid in t.partitions:
            code, msg = _elect_one(image, t.topic, pid, election, records)
            parts.append((pid, code, msg))
        results.append((t.topic, parts))
    return records, results


def rebalance(image: MetadataImage) -> list[Any]:
    """Contract 3: the records of one preferred-leader balancing round."""
    records: list[Any] = []
    for _name, tid in sorted(image.topic_ids.items()):
        for pid, p in sorted(image.topics[tid].partitions.items()):
            if not p.replicas or p.leader == p.replicas[0]:
                continue
            record = change.build(image, tid, pid, p, election=change.PREFERRED)
            if record is not None and record.leader == p.replicas[0]:
                records.append(record)
                if len(records) >= MAX_ELECTIONS:
                    return records
    return records
