"""Operator RPCs on the controller listener (direct, or forwarded by a broker inside Envelope): AlterConfigs (33),
ElectLeaders (43), AlterPartitionReassignments (45), ListPartitionReassignments (46); plus the active
controller's periodic preferred-leader rebalance.

Contracts:
1. Each request is validated against the latest image (kraftd.controller.configs / elect / reassign), its
   records appended as one atomic batch and answered after commit (controller_glue contract 3). Not the active
   controller: NOT_CONTROLLER for every entry (and top level where the response has one).
2. ElectLeaders: the top-level error is NONE (v1+); per-partition errors as kraftd.controller.elect.
2a. ListPartitionReassignments is a read of the committed image (never the leader's uncommitted view, as
   Kafka's controller reads at its last committed offset), answered only after the read barrier confirms this
   node still leads (kraftd.shell.raft.reads contract 1); otherwise NOT_CONTROLLER (or the barrier's error).
2b. An ElectLeaders refused whole (not the active controller, a failed write) answers as
   :func:`elect_leaders_failed`: the error at the top level from v1, on every requested partition at every version.
3. Rebalance: with ``auto.leader.rebalance.enable`` (default true) the active controller runs a preferred
   election round (kraftd.controller.elect contract 3) every ``leader.imbalance.check.interval.seconds``. The
   round's O(partitions) scan runs off the event loop over a copy of the persistent image (issue 22); its records
   are written only when the latest image is still the one scanned, else the round is skipped.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Protocol

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
from generated.messages import ApiKey
from kraftd.controller import configs, elect, reassign
from kraftd.shell.controller.glue import ControllerPort
from kraftd.shell.raft.reads import ReadBarriers
from kwire.errors import ErrorCode


class PartitionAdminPort(ControllerPort, Protocol):
    reads: ReadBarriers


log = logging.getLogger("kraftd.controller")

NOT_CONTROLLER_MESSAGE = "This is not the correct controller for this cluster."


def elect_leaders_failed(req: ElectLeadersRequest, version: int, code: ErrorCode) -> ElectLeadersResponse:
    """Contract 2b: v1+ carries ``code`` at the top level; v0 has no such field, so every requested partition
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


def log_refusals(api: str, results: list[tuple[int, str, ErrorCode, str | None]]) -> None:
    """One info line per config resource refused (names and messages repr-quoted: a peer cannot forge a line)."""
    for rtype, rname, code, message in results:
        if code:
            log.info(
                "%s refused %s %r: %s %r",
                api,
                configs.TYPE_NAMES.get(rtype, rtype),
                rname,
                ErrorCode(code).name,
                message,
            )


class ControllerOps:
    def __init__(self, node: PartitionAdminPort) -> None:
        self.node = node

    @property
    def machine(self) -> Any:
        return self.node.controller.machine

    async def handle(self, api_key: int, body: Any, version: int) -> Any:
        if api_key == ApiKey.ALTER_CONFIGS:
            return await self._alter_configs(body)
        if api_key == ApiKey.ELECT_LEADERS:
            return await self._elect_leaders(body, version)
        if api_key == ApiKey.ALTER_PARTITION_REASSIGNMENTS:
            return await self._alter_reassignments(body)
        return await self._list_reassignments(body)

    async def _alter_configs(self, req: AlterConfigsRequest) -> AlterConfigsResponse:
        records, results = configs.alter_configs(self.machine.latest(), req)
        log_refusals("AlterConfigs", results)
        error = await self.node.controller.try_write(records)
        return AlterConfigsResponse(
            responses=[
                AlterConfigsResourceResponse(
                    error_code=error if code == ErrorCode.NONE and error else code,
                    error_message=message,
                    resource_type=rtype,
                    resource_name=rname,
                )
                for rtype, rname, code, message in results
            ]
        )

    async def _elect_leaders(self, req: ElectLeadersRequest, version: int) -> ElectLeadersResponse:
        records, results = elect.elect_leaders(self.machine.latest(), req)
        error = await self.node.controller.try_write(records)
        if error:
            return elect_leaders_failed(req, version, ErrorCode(error))
        if records:
            log.info("ElectLeaders (type %d): %d leader change(s)", req.election_type, len(records))
        return ElectLeadersResponse(
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

    async def _alter_reassignments(
        self, req: AlterPartitionReassignmentsRequest
    ) -> AlterPartitionReassignmentsResponse:
        records, results = reassign.alter_reassignments(self.machine.latest(), req)
        error = await self.node.controller.try_write(records)
        if error:
            return AlterPartitionReassignmentsResponse(
                error_code=error, error_message=NOT_CONTROLLER_MESSAGE, responses=[]
            )
        if records:
            log.info("AlterPartitionReassignments: %d partition change(s)", len(records))
        return AlterPartitionReassignmentsResponse(
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

    async def _list_reassignments(
        self, req: ListPartitionReassignmentsRequest
    ) -> ListPartitionReassignmentsResponse:
        """Contract 2a."""
        code = await self.node.reads.before_read()
        if code == ErrorCode.NONE and not self.machine.active:  # deposed while reading
            code = ErrorCode.NOT_CONTROLLER
        if code != ErrorCode.NONE:
            message = NOT_CONTROLLER_MESSAGE if code == ErrorCode.NOT_CONTROLLER else None
            return ListPartitionReassignmentsResponse(error_code=code, error_message=message, topics=[])
        found = reassign.list_reassignments(self.machine.committed, req)
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

    # ---- periodic rebalance (contract 3) ----------------------------------------------------------------------
    async def run_rebalance(self) -> None:
        cfg = self.node.config
        if not cfg.auto_leader_rebalance:
            return
        while True:
            await asyncio.sleep(cfg.leader_imbalance_check_interval_s)
            if not self.machine.active:
                continue
            try:
                # Issue 22: the O(partitions) scan runs in a worker thread over an O(1) copy of the persistent
                # image; its records are written only if the image has not moved meanwhile (else next round).
                image = self.machine.latest().copy()
                records = await asyncio.to_thread(elect.rebalance, image)
                if records and self.machine.active and self.machine.latest().offset == image.offset:
                    log.info("preferred-leader rebalance: moving %d leadership(s)", len(records))
                    await self.node.controller.try_write(records)
            except Exception as exc:  # noqa: BLE001 - a round that fails is retried at the next interval
                log.debug("preferred-leader rebalance failed: %s", exc)
