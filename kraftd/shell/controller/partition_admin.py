"""Operator RPCs on the controller listener (direct, or forwarded by a broker inside Envelope): AlterConfigs (33),
ElectLeaders (43), AlterPartitionReassignments (45), ListPartitionReassignments (46); plus the active
controller's periodic preferred-leader rebalance.

Contracts:
1. AlterConfigs, ElectLeaders and AlterPartitionReassignments are controller operations
   (kraftd.controller.ops.partitions) over the latest image, written and answered by
   kraftd.shell.controller.glue contract 5 (one atomic batch, answered after commit; NOT_CONTROLLER in the API's
   own error shape).
2a. ListPartitionReassignments is a read of the committed image (never the leader's uncommitted view, as
   Kafka's controller reads at its last committed offset), answered only after the read barrier confirms this
   node still leads (kraftd.shell.raft.reads contract 1); otherwise NOT_CONTROLLER (or the barrier's error).
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
from generated.alter_partition_reassignments_request import AlterPartitionReassignmentsRequest
from generated.elect_leaders_request import ElectLeadersRequest
from generated.list_partition_reassignments_request import ListPartitionReassignmentsRequest
from kraftd.controller import elect
from kraftd.controller.ops import partitions as ops
from kraftd.shell.controller.glue import ControllerPort
from kraftd.shell.raft.reads import ReadBarriers
from kwire.errors import ErrorCode


class PartitionAdminPort(ControllerPort, Protocol):
    reads: ReadBarriers


log = logging.getLogger("kraftd.controller")


class ControllerOps:
    def __init__(self, node: PartitionAdminPort) -> None:
        self.node = node

    @property
    def machine(self) -> Any:
        return self.node.controller.machine

    async def alter_configs(self, req: AlterConfigsRequest, version: int, principal: str) -> Any:
        return await self.node.controller.run(ops.alter_configs(self.machine.latest(), req))

    async def elect_leaders(self, req: ElectLeadersRequest, version: int, principal: str) -> Any:
        return await self.node.controller.run(ops.elect_leaders(self.machine.latest(), req, version))

    async def alter_reassignments(
        self, req: AlterPartitionReassignmentsRequest, version: int, principal: str
    ) -> Any:
        return await self.node.controller.run(ops.alter_reassignments(self.machine.latest(), req))

    async def list_reassignments(
        self, req: ListPartitionReassignmentsRequest, version: int, principal: str
    ) -> Any:
        """Contract 2a."""
        code = await self.node.reads.before_read()
        if code == ErrorCode.NONE and not self.machine.active:  # deposed while reading
            code = ErrorCode.NOT_CONTROLLER
        if code != ErrorCode.NONE:
            return ops.list_reassignments_failed(code)
        return ops.list_reassignments(self.machine.committed, req)

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
