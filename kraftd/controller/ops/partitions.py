"""AlterConfigs (33), ElectLeaders (43), AlterPartitionReassignments (45) as controller operations
(kraftd.controller.result), and the answer of ListPartitionReassignments (46) from an image.

Contracts:
1. AlterConfigs: entries refused by validation keep their error, the others carry the write's; each refused
   config resource is one info line (:func:`refusal_notes`, names and messages repr-quoted).
2. ElectLeaders: the top-level error is NONE (v1+); per-partition errors as kraftd.controller.elect. Refused
   whole (not the active controller, a failed write) it answers as :func:`elect_leaders_failed`: the error at
   the top level from v1, on every requested partition at every version.
3. AlterPartitionReassignments refused whole answers the error with Kafka's NOT_CONTROLLER message and no
   topics.
"""

from __future__ import annotations

from generated.alter_configs_request import AlterConfigsRequest
from generated.alter_configs_response import AlterConfigsResourceResponse, AlterConfigsResponse
from generated.alter_partition_reassignments_request import AlterPartitionReassignmentsRequest
from generated.alter_partition_reassignments_response import (
    AlterPartitionReassignmentsResponse,
    ReassignablePartitionResponse,
    ReassignableTopicResponse,
)
from generated.elect_leaders_request import ElectLeadersRequest
from generated.elect_leaders_response import ElectLeadersResponse, PartitionResult, ReplicaElectionResult
from generated.list_partition_reassignments_request import ListPartitionReassignmentsRequest
from generated.list_partition_reassignments_response import (
    ListPartitionReassignmentsResponse,
    OngoingPartitionReassignment,
    OngoingTopicReassignment,
)
from kraftd.controller import configs, elect, reassign
from kraftd.controller.image import MetadataImage
from kraftd.controller.result import ControllerResult, LogLine, from_builder
from kwire.errors import ErrorCode

NOT_CONTROLLER_MESSAGE = "This is not the correct controller for this cluster."


def refusal_notes(api: str, results: list[tuple[int, str, ErrorCode, str | None]]) -> list[LogLine]:
    """Contract 1: one info line per config resource refused."""
    return [
        ("%s refused %s %r: %s %r", (api, configs.TYPE_NAMES.get(t, t), name, ErrorCode(code).name, message))
        for t, name, code, message in results
        if code
    ]


def alter_configs(image: MetadataImage, req: AlterConfigsRequest) -> ControllerResult[AlterConfigsResponse]:
    records, results = configs.alter_configs(image, req)
    return from_builder(
        records,
        lambda error: AlterConfigsResponse(
            responses=[
                AlterConfigsResourceResponse(
                    error_code=code or error, error_message=message, resource_type=rtype, resource_name=rname
                )
                for rtype, rname, code, message in results
            ]
        ),
        notes=refusal_notes("AlterConfigs", results),
    )


def elect_leaders_failed(req: ElectLeadersRequest, version: int, code: ErrorCode) -> ElectLeadersResponse:
    """Contract 2: v1+ carries ``code`` at the top level; v0 has no such field, so every requested partition
    carries it (as Kafka's ElectLeadersRequest.getErrorResponse); a null list (all partitions) gets none."""
    per_partition = [
        ReplicaElectionResult(
            topic=t.topic,
            partition_result=[
                PartitionResult(partition_id=p, error_code=code, error_message=None) for p in t.partitions
            ],
        )
        for t in req.topic_partitions or []
    ]
    return ElectLeadersResponse(
        error_code=code if version >= 1 else ErrorCode.NONE, replica_election_results=per_partition
    )


def elect_leaders(
    image: MetadataImage, req: ElectLeadersRequest, version: int
) -> ControllerResult[ElectLeadersResponse]:
    """Contract 2."""
    records, results = elect.elect_leaders(image, req)
    response = ElectLeadersResponse(
        error_code=ErrorCode.NONE,
        replica_election_results=[
            ReplicaElectionResult(
                topic=topic,
                partition_result=[
                    PartitionResult(partition_id=pid, error_code=code, error_message=msg)
                    for pid, code, msg in parts
                ],
            )
            for topic, parts in results
        ],
    )
    done: list[LogLine] = []
    if records:
        done = [("ElectLeaders (type %d): %d leader change(s)", (req.election_type, len(records)))]
    return ControllerResult(
        records, response, lambda error: elect_leaders_failed(req, version, error), done=done
    )


def alter_reassignments(
    image: MetadataImage, req: AlterPartitionReassignmentsRequest
) -> ControllerResult[AlterPartitionReassignmentsResponse]:
    """Contract 3."""
    records, results = reassign.alter_reassignments(image, req)
    response = AlterPartitionReassignmentsResponse(
        error_code=ErrorCode.NONE,
        error_message=None,
        allow_replication_factor_change=req.allow_replication_factor_change,
        responses=[
            ReassignableTopicResponse(
                name=topic,
                partitions=[
                    ReassignablePartitionResponse(partition_index=pid, error_code=code, error_message=msg)
                    for pid, code, msg in parts
                ],
            )
            for topic, parts in results
        ],
    )

    def failed(error: ErrorCode) -> AlterPartitionReassignmentsResponse:
        return AlterPartitionReassignmentsResponse(
            error_code=error, error_message=NOT_CONTROLLER_MESSAGE, responses=[]
        )

    done: list[LogLine] = []
    if records:
        done = [("AlterPartitionReassignments: %d partition change(s)", (len(records),))]
    return ControllerResult(records, response, failed, done=done)


def list_reassignments(
    image: MetadataImage, req: ListPartitionReassignmentsRequest
) -> ListPartitionReassignmentsResponse:
    """The ongoing reassignments of ``image`` (a read: the shell gives it the committed image)."""
    found = reassign.list_reassignments(image, req)
    return ListPartitionReassignmentsResponse(
        error_code=ErrorCode.NONE,
        error_message=None,
        topics=[
            OngoingTopicReassignment(
                name=name,
                partitions=[
                    OngoingPartitionReassignment(
                        partition_index=pid,
                        replicas=list(p.replicas),
                        adding_replicas=list(p.adding_replicas),
                        removing_replicas=list(p.removing_replicas),
                    )
                    for pid, p in parts
                ],
            )
            for name, parts in found
        ],
    )


def list_reassignments_failed(code: int) -> ListPartitionReassignmentsResponse:
    message = NOT_CONTROLLER_MESSAGE if code == ErrorCode.NOT_CONTROLLER else None
    return ListPartitionReassignmentsResponse(error_code=code, error_message=message, topics=[])
