"""BrokerRegistration (62), BrokerHeartbeat (63), UnregisterBroker (64), AllocateProducerIds (67),
AlterPartition (56), AssignReplicasToDirs (73), ControllerRegistration (70) as controller operations
(kraftd.controller.result).

Contracts:
1. A request refused by validation (a top-level error) writes nothing and answers that error alone; a failed
   write answers the write's error alone (the responses' top-level ``error_code``, Kafka's error shape).
2. The validation is kraftd.controller.brokers / broker_dirs / partitions / controller_registration's.
3. :func:`heartbeat_unchanged` (issue 24, the shell's short path): the answer to a heartbeat of a registered,
   unfenced broker at its epoch asking for no state change (no controlled shutdown, no fence, no offline
   directory), which writes no record (kraftd.controller.brokers contract 2), else None; it is the answer
   :func:`heartbeat` gives, and it touches the session as :func:`heartbeat` does. Answers are shared objects, one
   per (caught up, fenced, shut down): never mutated, so the listener encodes a turn's answers once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from generated.allocate_producer_ids_request import AllocateProducerIdsRequest
from generated.allocate_producer_ids_response import AllocateProducerIdsResponse
from generated.alter_partition_request import AlterPartitionRequest
from generated.alter_partition_response import AlterPartitionResponse
from generated.alter_partition_response import PartitionData as ApPartitionData
from generated.alter_partition_response import TopicData as ApTopicData
from generated.assign_replicas_to_dirs_request import AssignReplicasToDirsRequest
from generated.assign_replicas_to_dirs_response import AssignReplicasToDirsResponse
from generated.assign_replicas_to_dirs_response import DirectoryData as ArdDirectory
from generated.assign_replicas_to_dirs_response import PartitionData as ArdPartition
from generated.assign_replicas_to_dirs_response import TopicData as ArdTopic
from generated.broker_heartbeat_request import BrokerHeartbeatRequest
from generated.broker_heartbeat_response import BrokerHeartbeatResponse
from generated.broker_registration_request import BrokerRegistrationRequest
from generated.broker_registration_response import BrokerRegistrationResponse
from generated.controller_registration_request import ControllerRegistrationRequest
from generated.controller_registration_response import ControllerRegistrationResponse
from generated.unregister_broker_request import UnregisterBrokerRequest
from generated.unregister_broker_response import UnregisterBrokerResponse
from kraftd.controller import broker_dirs, brokers, controller_registration, partitions
from kraftd.controller.image import MetadataImage
from kraftd.controller.result import ControllerResult, LogLine
from kwire.errors import ErrorCode

R = TypeVar("R")


def _result(
    records: Sequence[Any],
    error: ErrorCode,
    ok: Callable[[], R],
    failed: Callable[[ErrorCode], R],
    done: Sequence[LogLine] = (),
) -> ControllerResult[R]:
    """Contract 1."""
    if error:
        return ControllerResult((), failed(error), failed)
    return ControllerResult(records, ok(), failed, done=done)


def register_broker(
    image: MetadataImage, req: BrokerRegistrationRequest, cluster_id: str, hb: brokers.Heartbeats, now_ms: int
) -> ControllerResult[BrokerRegistrationResponse]:
    out = brokers.register(image, req, cluster_id, hb, now_ms)
    return _result(
        out.records,
        out.error,
        lambda: BrokerRegistrationResponse(error_code=ErrorCode.NONE, broker_epoch=out.broker_epoch),
        lambda e: BrokerRegistrationResponse(error_code=e),
        [("registered broker %d at epoch %d", (req.broker_id, out.broker_epoch))],
    )


def heartbeat(
    image: MetadataImage, req: BrokerHeartbeatRequest, hb: brokers.Heartbeats, now_ms: int
) -> ControllerResult[BrokerHeartbeatResponse]:
    out = brokers.heartbeat(image, req, hb, now_ms)
    done: list[LogLine] = []
    if out.records:
        fmt = "broker %d heartbeat: %d record(s), fenced=%s"
        done = [(fmt, (req.broker_id, len(out.records), out.is_fenced))]
    return _result(
        out.records,
        out.error,
        lambda: BrokerHeartbeatResponse(
            error_code=ErrorCode.NONE,
            is_caught_up=out.is_caught_up,
            is_fenced=out.is_fenced,
            should_shut_down=out.should_shut_down,
        ),
        lambda e: BrokerHeartbeatResponse(error_code=e),
        done,
    )


_UNCHANGED: dict[tuple[bool, bool, bool], BrokerHeartbeatResponse] = {}


def heartbeat_unchanged(
    image: MetadataImage, req: BrokerHeartbeatRequest, hb: brokers.Heartbeats, now_ms: int
) -> BrokerHeartbeatResponse | None:
    """Contract 3."""
    if req.want_shut_down or req.want_fence or req.offline_log_dirs:
        return None
    b = image.brokers.get(req.broker_id)
    if b is None or b.fenced or b.epoch != req.broker_epoch:
        return None
    out = brokers.heartbeat(image, req, hb, now_ms)
    assert not out.records and not out.error  # brokers contract 2: an unfenced broker's plain heartbeat
    shape = (out.is_caught_up, out.is_fenced, out.should_shut_down)
    answer = _UNCHANGED.get(shape)
    if answer is None:
        answer = _UNCHANGED[shape] = BrokerHeartbeatResponse(
            error_code=ErrorCode.NONE,
            is_caught_up=out.is_caught_up,
            is_fenced=out.is_fenced,
            should_shut_down=out.should_shut_down,
        )
    return answer


def heartbeat_failed(code: ErrorCode) -> BrokerHeartbeatResponse:
    """A heartbeat whose partition moves (controlled shutdown, unfencing) could not be written."""
    return BrokerHeartbeatResponse(error_code=code)


def unregister_broker(
    image: MetadataImage, req: UnregisterBrokerRequest
) -> ControllerResult[UnregisterBrokerResponse]:
    records, error, message = broker_dirs.unregister(image, req.broker_id)
    return _result(
        records,
        error,
        lambda: UnregisterBrokerResponse(error_code=ErrorCode.NONE),
        lambda e: UnregisterBrokerResponse(error_code=e, error_message=message),
        [("unregistered broker %d", (req.broker_id,))],
    )


def assign_replicas_to_dirs(
    image: MetadataImage, req: AssignReplicasToDirsRequest
) -> ControllerResult[AssignReplicasToDirsResponse]:
    records, error, results = broker_dirs.assign_replicas_to_dirs(image, req)
    return _result(
        records,
        error,
        lambda: AssignReplicasToDirsResponse(
            error_code=ErrorCode.NONE,
            directories=[
                ArdDirectory(
                    id=d,
                    topics=[
                        ArdTopic(
                            topic_id=t,
                            partitions=[ArdPartition(partition_index=p, error_code=c) for p, c in parts],
                        )
                        for t, parts in topics
                    ],
                )
                for d, topics in results
            ],
        ),
        lambda e: AssignReplicasToDirsResponse(error_code=e),
    )


def alter_partition(
    image: MetadataImage, req: AlterPartitionRequest, version: int
) -> ControllerResult[AlterPartitionResponse]:
    records, top, results = partitions.alter_partition(image, req, version)

    def ok() -> AlterPartitionResponse:
        by_topic: dict[Any, list[ApPartitionData]] = {}
        for tid, pid, code, state in results:
            part = ApPartitionData(partition_index=pid, error_code=code)
            if state is not None:
                part.leader_id, part.leader_epoch, part.isr = (
                    state.leader,
                    state.leader_epoch,
                    list(state.isr),
                )
                part.leader_recovery_state = state.leader_recovery_state
                part.partition_epoch = state.partition_epoch
            by_topic.setdefault(tid, []).append(part)
        return AlterPartitionResponse(
            error_code=ErrorCode.NONE,
            topics=[ApTopicData(topic_id=tid, partitions=parts) for tid, parts in by_topic.items()],
        )

    return _result(records, top, ok, lambda e: AlterPartitionResponse(error_code=e))


def allocate_producer_ids(
    image: MetadataImage, req: AllocateProducerIdsRequest
) -> ControllerResult[AllocateProducerIdsResponse]:
    records, error, start = brokers.allocate_producer_ids(image, req.broker_id, req.broker_epoch)
    return _result(
        records,
        error,
        lambda: AllocateProducerIdsResponse(
            error_code=ErrorCode.NONE, producer_id_start=start, producer_id_len=brokers.PRODUCER_ID_BLOCK
        ),
        lambda e: AllocateProducerIdsResponse(error_code=e),
    )


def register_controller(
    image: MetadataImage, req: ControllerRegistrationRequest
) -> ControllerResult[ControllerRegistrationResponse]:
    records, error = controller_registration.register_controller(image, req)
    if error:  # refused: error_message left at its default, as before the write
        return ControllerResult((), ControllerRegistrationResponse(error_code=error), _registration_failed)
    return ControllerResult(records, _registration_failed(ErrorCode.NONE), _registration_failed)


def _registration_failed(error: ErrorCode) -> ControllerRegistrationResponse:
    return ControllerRegistrationResponse(error_code=error, error_message=None)
