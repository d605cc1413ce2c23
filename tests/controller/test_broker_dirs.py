"""UnregisterBroker (64), AssignReplicasToDirs (73) and offline log directories in heartbeats, as Kafka 4.3.1's
ReplicationControlManager decides them (unregisterBroker, handleAssignReplicasToDirs, handleDirectoriesOffline).

Images are built only by replaying records; every proposed record is replayed back before the next step."""

from __future__ import annotations

import uuid
from typing import Any

from generated.assign_replicas_to_dirs_request import (
    AssignReplicasToDirsRequest,
    DirectoryData,
    PartitionData,
    TopicData,
)
from generated.broker_registration_change_record import BrokerRegistrationChangeRecord
from generated.feature_level_record import FeatureLevelRecord
from generated.partition_change_record import PartitionChangeRecord
from generated.partition_record import PartitionRecord
from generated.unregister_broker_record import UnregisterBrokerRecord
from kraftd.controller import broker_dirs, brokers
from kraftd.controller.image import MetadataImage
from kwire.errors import ErrorCode
from tests.helpers.controller import CLUSTER, TID
from tests.helpers.controller import apply_records as _apply
from tests.helpers.controller import cluster as _cluster
from tests.helpers.controller import heartbeat as _hb
from tests.helpers.controller import partition as _p
from tests.helpers.controller import registration as _reg
from tests.helpers.controller import topic as _topic

E = ErrorCode


def _dir(bid: int) -> uuid.UUID:
    return uuid.UUID(int=500 + bid)  # the single log directory tests.controller.test_lifecycle registers


def _assign(image: MetadataImage, bid: int, placements: dict[uuid.UUID, dict[uuid.UUID, list[int]]]) -> Any:
    req = AssignReplicasToDirsRequest(
        broker_id=bid,
        broker_epoch=image.brokers[bid].epoch if bid in image.brokers else 0,
        directories=[
            DirectoryData(
                id=d,
                topics=[
                    TopicData(topic_id=t, partitions=[PartitionData(partition_index=p) for p in parts])
                    for t, parts in topics.items()
                ],
            )
            for d, topics in placements.items()
        ],
    )
    return broker_dirs.assign_replicas_to_dirs(image, req)


# ---- UnregisterBroker -----------------------------------------------------------------------------------------
def test_unregister_unknown_broker_is_refused_with_kafkas_message() -> None:
    image, _ = _cluster(2)
    assert broker_dirs.unregister(image, 9) == (
        [],
        E.BROKER_ID_NOT_REGISTERED,
        "Broker ID 9 is not currently registered",
    )


def test_unregister_moves_leadership_then_removes_the_registration() -> None:
    image, hb = _cluster(3)
    _topic(image, [1, 2, 3], [2, 1, 3], leader=2)
    epoch = image.brokers[2].epoch
    records, error, message = broker_dirs.unregister(image, 2)
    assert (error, message) == (E.NONE, None)
    change, unregister = records
    assert isinstance(change, PartitionChangeRecord) and change.isr == [1, 3] and change.leader == 1
    assert isinstance(unregister, UnregisterBrokerRecord)
    assert (unregister.broker_id, unregister.broker_epoch) == (2, epoch)
    _apply(image, records)
    assert 2 not in image.brokers
    assert (_p(image).leader, _p(image).isr) == (1, [1, 3])
    # The broker learns it at its next heartbeat and may register again, at a higher epoch.
    stale = brokers.heartbeat(image, _hb_for(2, epoch, image.offset), hb, 0)
    assert stale.error == E.BROKER_ID_NOT_REGISTERED
    again = brokers.register(image, _reg(2, inc=2), CLUSTER, hb, 100_000)
    assert again.error == E.NONE and again.broker_epoch > epoch


def _hb_for(bid: int, epoch: int, offset: int) -> Any:
    from generated.broker_heartbeat_request import BrokerHeartbeatRequest

    return BrokerHeartbeatRequest(broker_id=bid, broker_epoch=epoch, current_metadata_offset=offset)


def test_unregister_a_fenced_broker_only_removes_it() -> None:
    image, _ = _cluster(3)
    _topic(image, [1, 2], [1], leader=1)
    _apply(image, brokers.fence(image, 3))
    records, error, _ = broker_dirs.unregister(image, 3)
    assert error == E.NONE and [type(r) for r in records] == [UnregisterBrokerRecord]


# ---- AssignReplicasToDirs -------------------------------------------------------------------------------------
def test_assignment_checks_version_registration_and_epoch() -> None:
    image, _ = _cluster(2)
    _topic(image, [1, 2], [1, 2], leader=1)
    old = MetadataImage()
    _apply(old, [FeatureLevelRecord(name="metadata.version", feature_level=16)])  # 3.7-IV1: no directories
    assert _assign(old, 1, {})[1] == E.UNSUPPORTED_VERSION
    assert _assign(image, 7, {})[1] == E.BROKER_ID_NOT_REGISTERED
    req = AssignReplicasToDirsRequest(broker_id=1, broker_epoch=image.brokers[1].epoch + 1)
    assert broker_dirs.assign_replicas_to_dirs(image, req)[1] == E.STALE_BROKER_EPOCH


def test_assignment_answers_per_partition_in_request_order() -> None:
    image, _ = _cluster(4)
    _topic(image, [1, 2, 3], [1, 2, 3], leader=1)
    ghost = uuid.UUID(int=4242)
    records, error, results = _assign(image, 2, {_dir(2): {ghost: [0], TID: [5, 0]}})
    assert error == E.NONE
    assert results == [
        (
            _dir(2),
            [(ghost, [(0, E.UNKNOWN_TOPIC_ID)]), (TID, [(5, E.UNKNOWN_TOPIC_OR_PARTITION), (0, E.NONE)])],
        )
    ]
    (change,) = records
    # Directories, aligned with the replicas: the placed one, and each other broker's single directory.
    assert change.directories == [_dir(1), _dir(2), _dir(3)] and change.isr is None and change.leader == -2
    _apply(image, records)
    assert _p(image).directories == [_dir(1), _dir(2), _dir(3)]
    # The same placement again changes nothing; a broker that holds no replica is told so.
    assert _assign(image, 2, {_dir(2): {TID: [0]}})[0] == []
    _, _, results = _assign(image, 4, {_dir(4): {TID: [0]}})
    assert results == [(_dir(4), [(TID, [(0, E.NOT_LEADER_OR_FOLLOWER)])])]


def test_assignment_to_an_offline_directory_takes_the_broker_out_of_the_isr() -> None:
    image, _ = _cluster(3)
    _topic(image, [1, 2, 3], [2, 1, 3], leader=2)
    gone = uuid.UUID(int=999)  # not among broker 2's online directories
    records, error, _ = _assign(image, 2, {gone: {TID: [0]}})
    assert error == E.NONE
    placed, moved = records
    assert placed.directories == [_dir(1), gone, _dir(3)]
    assert moved.isr == [1, 3] and moved.leader == 1
    _apply(image, records)
    assert (_p(image).leader, _p(image).isr, _p(image).directories[1]) == (1, [1, 3], gone)


# ---- offline directories reported by heartbeats ---------------------------------------------------------------
def test_heartbeat_with_offline_directory_moves_its_partitions_and_updates_the_registration() -> None:
    image, hb = _cluster(3)
    spare = uuid.UUID(int=602)
    _apply(
        image,
        [
            BrokerRegistrationChangeRecord(
                broker_id=2, broker_epoch=image.brokers[2].epoch, log_dirs=[_dir(2), spare]
            )
        ],
    )
    _topic(image, [1, 2, 3], [2, 1, 3], leader=2)
    _apply(
        image,
        [
            PartitionRecord(
                partition_id=1,
                topic_id=TID,
                replicas=[2, 3],
                isr=[2, 3],
                leader=2,
                directories=[spare, _dir(3)],
            )
        ],
    )
    _apply(
        image, [PartitionChangeRecord(partition_id=0, topic_id=TID, directories=[_dir(1), _dir(2), _dir(3)])]
    )
    out = brokers.heartbeat(image, _hb(image, 2, offline_log_dirs=[_dir(2), uuid.UUID(int=31337)]), hb, 0)
    assert out.error == E.NONE and not out.is_fenced
    move, registration = out.records
    # Only partition 0 lives in the failed directory; partition 1 (in the spare one) keeps broker 2 as leader.
    assert (move.partition_id, move.isr, move.leader) == (0, [1, 3], 1)
    assert isinstance(registration, BrokerRegistrationChangeRecord) and registration.log_dirs == [spare]
    _apply(image, out.records)
    assert image.brokers[2].log_dirs == [spare]
    assert image.topics[TID].partitions[1].leader == 2
    # Reported again, the directory is already offline: nothing more is written.
    again = brokers.heartbeat(image, _hb(image, 2, offline_log_dirs=[_dir(2)]), hb, 0)
    assert again.records == []


def test_offline_directories_are_ignored_before_directory_support() -> None:
    image, _ = _cluster(2)
    _apply(image, [FeatureLevelRecord(name="metadata.version", feature_level=16)])
    assert brokers.offline_dirs(image, 1, [_dir(1)]) == []
