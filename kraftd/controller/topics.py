"""CreateTopics (19) and DeleteTopics (20) on the active controller, as pure functions of the latest image.

Contracts (Kafka 4.3.1 ReplicationControlManager, reduced to what is listed):
1. CreateTopics, per topic: an invalid name -> INVALID_TOPIC_EXCEPTION; a name already in the image (or twice
   in the request) -> TOPIC_ALREADY_EXISTS; NumPartitions/ReplicationFactor -1 take the defaults (1, 1); a
   partition count < 1 -> INVALID_PARTITIONS; a replication factor < 1 or above the number of unfenced brokers
   -> INVALID_REPLICATION_FACTOR (Kafka's message); a new topic id never collides with an existing one; explicit assignments must name registered brokers, each
   partition once. A valid topic becomes TopicRecord + one PartitionRecord per partition (leader = first
   replica, ISR = replicas, epochs 0, the broker's directory when it has exactly one) + one ConfigRecord per
   config, all in the caller's single atomic batch; validateOnly writes nothing.
2. Placement: partition p of a new topic gets the ``rf`` usable brokers (unfenced, not in controlled shutdown)
   starting at position (start + p) of the sorted list (rack-unaware striping), where ``start`` comes from the injected
   random source so topics spread over brokers.
3. DeleteTopics: each name (v0-5) or id/name (v6) present -> RemoveTopicRecord; absent -> UNKNOWN_TOPIC_OR_PARTITION
   (by name) or UNKNOWN_TOPIC_ID (by id).
4. Bounded steps (issues 22, 24): :func:`create_topics_steps` is :func:`create_topics` as a generator that yields
   after each topic and every ``STEP`` partitions, so the shell can spread a large request (50 topics x 100
   partitions: 100-450 ms of the leader's loop as one step) over loop turns; the records are still ONE atomic
   write. It reads a :func:`frozen` image (the persistent maps as they were when it began: kraftd.controller.image
   invariant 3). :func:`still_valid` tells whether what it computed is what the latest image would give: the same
   features and brokers, and no created name or id taken meanwhile; else the caller computes it again at once.
   Per request, not per partition: the usable brokers are listed once, each broker's directory looked up once.
"""

from __future__ import annotations

import random
import re
import uuid
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Any

from generated.config_record import ConfigRecord
from generated.create_topics_request import CreatableTopic, CreateTopicsRequest
from generated.partition_record import PartitionRecord
from generated.remove_topic_record import RemoveTopicRecord
from generated.topic_record import TopicRecord
from kraftd.controller import placement
from kraftd.controller.features import MV_DIRECTORIES
from kraftd.controller.image import MetadataImage
from kwire.errors import ErrorCode
from kwire.resources import ConfigResourceType as CR

TOPIC_RESOURCE = int(CR.TOPIC)
DEFAULT_PARTITIONS = 1
DEFAULT_REPLICATION_FACTOR = 1
UNASSIGNED_DIR = uuid.UUID(int=0)
STEP = 500  # partitions built between two yields of create_topics_steps (contract 4)
_LEGAL = re.compile(r"^[a-zA-Z0-9._-]+$")


@dataclass(frozen=True, slots=True)
class TopicResult:
    name: str
    error: ErrorCode
    message: str | None = None
    topic_id: uuid.UUID = UNASSIGNED_DIR
    partitions: int = -1
    replication_factor: int = -1


def _name_error(name: str) -> str | None:
    if not name or name in (".", ".."):
        return "Topic name is illegal, it can't be empty or '.' or '..'"
    if len(name) > 249:
        return f"Topic name is illegal, it can't be longer than 249 characters, topic name: {name}"
    if not _LEGAL.match(name):
        return (
            f"Topic name {name} is illegal, it contains a character other than ASCII alphanumerics, '.', '_' "
            "and '-'"
        )
    return None


def usable_brokers(image: MetadataImage) -> list[int]:
    """Brokers new replicas may go to: registered, unfenced, not in controlled shutdown (sorted ids)."""
    return sorted(b for b, s in image.brokers.items() if not s.fenced and not s.in_controlled_shutdown)


def directories(image: MetadataImage, replicas: list[int]) -> list[uuid.UUID]:
    """PartitionRecord.Directories: one per replica from metadata.version 3.7-IV2 on, none before (the record
    version written below it has no such field)."""
    if image.metadata_version < MV_DIRECTORIES:
        return []
    return [_directory(image, b) for b in replicas]


def _directory(image: MetadataImage, broker_id: int) -> uuid.UUID:
    b = image.brokers.get(broker_id)
    return b.log_dirs[0] if b is not None and len(b.log_dirs) == 1 else UNASSIGNED_DIR


def _assignments(
    image: MetadataImage, t: CreatableTopic, rng: random.Random, live: list[int], racks: bool
) -> tuple[list[list[int]] | None, ErrorCode, str | None]:
    if t.assignments:
        out: dict[int, list[int]] = {}
        for a in t.assignments:
            if a.partition_index in out or not a.broker_ids or len(set(a.broker_ids)) != len(a.broker_ids):
                return None, ErrorCode.INVALID_REPLICA_ASSIGNMENT, "Invalid replica assignment."
            if any(b not in image.brokers for b in a.broker_ids):
                return (
                    None,
                    ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    "Replica assignment names an unknown broker.",
                )
            out[a.partition_index] = list(a.broker_ids)
        if sorted(out) != list(range(len(out))):
            return (
                None,
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                "Partitions must be numbered from 0 contiguously.",
            )
        return [out[i] for i in range(len(out))], ErrorCode.NONE, None
    partitions = DEFAULT_PARTITIONS if t.num_partitions == -1 else t.num_partitions
    rf = DEFAULT_REPLICATION_FACTOR if t.replication_factor == -1 else t.replication_factor
    if partitions < 1:
        return (
            None,
            ErrorCode.INVALID_PARTITIONS,
            "Number of partitions was set to an invalid non-positive value.",
        )
    if rf < 1:
        return None, ErrorCode.INVALID_REPLICATION_FACTOR, "Replication factor must be larger than 0."
    if rf > len(live):
        return (
            None,
            ErrorCode.INVALID_REPLICATION_FACTOR,
            f"Unable to replicate the partition {rf} time(s): The target replication factor of {rf} cannot be "
            f"reached because only {len(live)} broker(s) are registered or some brokers have all their log directories cordoned.",
        )
    if racks:  # racks set: Kafka's rack-aware striping
        return placement.place(rng, placement.usable(image), partitions, rf), ErrorCode.NONE, None
    start, n = rng.randrange(len(live)), len(live)
    twice = live + live  # partition p: live[(start + p) % n], then the next rf - 1 brokers round the list
    return [twice[k : k + rf] for k in ((start + p) % n for p in range(partitions))], ErrorCode.NONE, None


def create_topics(
    image: MetadataImage, req: CreateTopicsRequest, rng: random.Random
) -> tuple[list[Any], list[TopicResult]]:
    """Contracts 1 and 2: (records for every valid topic, one result per requested topic)."""
    steps = create_topics_steps(image, req, rng)
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]


def create_topics_steps(
    image: MetadataImage, req: CreateTopicsRequest, rng: random.Random
) -> Generator[None, None, tuple[list[Any], list[TopicResult]]]:
    """Contract 4: :func:`create_topics` in bounded steps; returns what it returns."""
    records: list[Any] = []
    results: list[TopicResult] = []
    seen: set[str] = set()
    ids: set[uuid.UUID] = set()
    live = usable_brokers(image)
    racks = any(image.brokers[b].rack for b in live)
    with_dirs = image.metadata_version >= MV_DIRECTORIES
    dir_of: dict[int, uuid.UUID] = {}
    for t in req.topics:
        yield
        bad = _name_error(t.name)
        if bad is not None:
            results.append(TopicResult(t.name, ErrorCode.INVALID_TOPIC_EXCEPTION, bad))
            continue
        if t.name in image.topic_ids or t.name in seen:
            results.append(
                TopicResult(t.name, ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{t.name}' already exists.")
            )
            continue
        seen.add(t.name)
        placement, error, message = _assignments(image, t, rng, live, racks)
        if placement is None:
            results.append(TopicResult(t.name, error, message))
            continue
        topic_id = uuid.UUID(int=rng.getrandbits(128))
        while topic_id in image.topics or topic_id == UNASSIGNED_DIR or topic_id in ids:
            topic_id = uuid.UUID(int=rng.getrandbits(128))
        ids.add(topic_id)
        results.append(TopicResult(t.name, ErrorCode.NONE, None, topic_id, len(placement), len(placement[0])))
        if req.validate_only:
            continue
        records.append(TopicRecord(name=t.name, topic_id=topic_id))
        for pid, replicas in enumerate(placement):
            dirs: list[uuid.UUID] = []
            if with_dirs:
                for b in replicas:
                    d = dir_of.get(b)
                    if d is None:
                        d = dir_of[b] = _directory(image, b)
                    dirs.append(d)
            records.append(
                PartitionRecord(
                    partition_id=pid,
                    topic_id=topic_id,
                    replicas=replicas,
                    isr=list(replicas),
                    leader=replicas[0],
                    leader_epoch=0,
                    partition_epoch=0,
                    directories=dirs,
                )
            )
            if pid % STEP == STEP - 1:
                yield
        for c in t.configs:
            records.append(
                ConfigRecord(resource_type=TOPIC_RESOURCE, resource_name=t.name, name=c.name, value=c.value)
            )
    return records, results


def frozen(image: MetadataImage) -> MetadataImage:
    """Contract 4: what CreateTopics reads of ``image`` (features, brokers, topics, names) as it is now; those maps
    are persistent, replaced and never changed by a record applied later (image invariant 3). Read only."""
    return MetadataImage(
        offset=image.offset,
        features=image.features,
        brokers=image.brokers,
        topics=image.topics,
        topic_ids=image.topic_ids,
    )


def still_valid(start: MetadataImage, latest: MetadataImage, results: Sequence[TopicResult]) -> bool:
    """Contract 4: True when CreateTopics computed over ``start`` gives what it would give over ``latest`` (but for
    the random choices): the same features and brokers, and no topic it creates named or numbered meanwhile."""
    if latest.features is not start.features and latest.features != start.features:
        return False
    if latest.brokers is not start.brokers and latest.brokers != start.brokers:
        return False
    return not any(
        r.name in latest.topic_ids or r.topic_id in latest.topics
        for r in results
        if r.error == ErrorCode.NONE
    )


def delete_topics(
    image: MetadataImage, names: list[str], ids: list[uuid.UUID]
) -> tuple[list[Any], list[tuple[str | None, uuid.UUID, ErrorCode]]]:
    """Contract 3: (records, (name, id, error) per requested topic, names first then ids)."""
    records: list[Any] = []
    results: list[tuple[str | None, uuid.UUID, ErrorCode]] = []
    done: set[uuid.UUID] = set()
    for name in names:
        tid = image.topic_ids.get(name)
        if tid is None:
            results.append((name, UNASSIGNED_DIR, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
            continue
        results.append((name, tid, ErrorCode.NONE))
        if tid not in done:
            done.add(tid)
            records.append(RemoveTopicRecord(topic_id=tid))
    for tid in ids:
        t = image.topics.get(tid)
        if t is None:
            results.append((None, tid, ErrorCode.UNKNOWN_TOPIC_ID))
            continue
        results.append((t.name, tid, ErrorCode.NONE))
        if tid not in done:
            done.add(tid)
            records.append(RemoveTopicRecord(topic_id=tid))
    return records, results
