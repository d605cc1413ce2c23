"""Admin RPCs on the controller listener (direct, or forwarded by a broker inside an Envelope: kraftd.shell.apis.routing
contract 11): CreateTopics (19), DeleteTopics (20), CreatePartitions (37), IncrementalAlterConfigs (44),
UpdateFeatures (57).

Contracts:
1. Requests reach these handlers only once the listener's authorization gate has allowed them (kwire.authz
   contract 7), for a forwarded request with the principal the broker forwarded.
2. Each is a controller operation (kraftd.controller.ops.topics) over the latest image, its ControllerResult
   written and answered by kraftd.shell.controller.glue contract 5: all records of one request as one atomic
   batch, answered after commit; NOT_CONTROLLER per entry when this node is not the active controller.
2a. CreateTopics is computed in the glue's slices (kraftd.controller.topics contract 4, glue contract 7) over the
   image as it was when the request arrived, and its records are encoded in those slices too (glue contract 8);
   when :func:`kraftd.controller.topics.still_valid` says a write applied meanwhile changed what it depends on,
   it is computed (and encoded) again at once over the latest image.
3. UpdateFeatures: kraft.version lives in the Raft log's control records: the quorum leader checks it first and
   changes it (kraft_upgrade) after the other features' records commit; any refusal fails the whole request.
"""

from __future__ import annotations

from typing import Any

from generated.create_partitions_request import CreatePartitionsRequest
from generated.create_topics_request import CreateTopicsRequest
from generated.delete_topics_request import DeleteTopicsRequest
from generated.incremental_alter_configs_request import IncrementalAlterConfigsRequest
from generated.update_features_request import UpdateFeaturesRequest
from kraftd.controller import topics
from kraftd.controller.features import KRAFT_VERSION
from kraftd.controller.ops import topics as ops
from kraftd.core.events import Tick
from kraftd.shell.controller.glue import ControllerPort, Framing
from kwire.errors import ErrorCode


class ControllerAdmin:
    def __init__(self, node: ControllerPort) -> None:
        self.node = node

    @property
    def machine(self) -> Any:
        return self.node.controller.machine

    async def create_topics(self, req: CreateTopicsRequest, version: int, principal: str) -> Any:
        """Contract 2a."""
        glue = self.node.controller
        start = topics.frozen(self.machine.latest())
        records, results = await glue.compute(topics.create_topics_steps(start, req, self.node.rng))
        result = ops.created_topics(req, records, results)
        # glue contract 8: encoded in slices before the last validation
        framing: Framing | None = await glue.frame(result.records)
        await glue.settled()
        latest = self.machine.latest()
        if not topics.still_valid(start, latest, results):
            records, results = topics.create_topics(latest, req, self.node.rng)
            result, framing = ops.created_topics(req, records, results), None
        return await glue.run(result, framing)

    async def delete_topics(self, req: DeleteTopicsRequest, version: int, principal: str) -> Any:
        return await self.node.controller.run(ops.delete_topics(self.machine.latest(), req))

    async def create_partitions(self, req: CreatePartitionsRequest, version: int, principal: str) -> Any:
        return await self.node.controller.run(
            ops.create_partitions(self.machine.latest(), req, self.node.rng)
        )

    async def incremental_alter_configs(
        self, req: IncrementalAlterConfigsRequest, version: int, principal: str
    ) -> Any:
        return await self.node.controller.run(ops.incremental_alter_configs(self.machine.latest(), req))

    async def update_features(self, req: UpdateFeaturesRequest, version: int, principal: str) -> Any:
        """Contract 3."""
        updates = ops.feature_updates(req)
        core = self.node.core
        kraft = [(name, level) for name, level, _ in updates if name == KRAFT_VERSION]
        updates = [u for u in updates if u[0] != KRAFT_VERSION]
        checked = [(n, *core.upgrade_kraft_version(level, True)) for n, level in kraft]
        result = ops.update_features(self.machine.latest(), updates, req.validate_only, checked)
        response = await self.node.controller.run(result)
        if kraft and response.error_code == ErrorCode.NONE and not req.validate_only:
            checked = [(n, *core.upgrade_kraft_version(level, False)) for n, level in kraft]
            self.node.post(Tick(self.node.now_ms()))  # the driver polls the core, which writes the batch
            rest = [(r.feature, r.error_code, r.error_message) for r in response.results[len(kraft) :]]
            response = ops.update_features_response(checked, rest, ErrorCode.NONE)
        return response
