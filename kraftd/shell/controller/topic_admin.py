"""Admin RPCs on the controller listener (direct, or forwarded by a broker inside an Envelope: kraftd.shell.apis.routing
contract 11): CreateTopics (19), DeleteTopics (20), CreatePartitions (37), IncrementalAlterConfigs (44),
UpdateFeatures (57).

Contracts:
1. Requests reach these handlers only once the listener's authorization gate has allowed them (kwire.authz
   contract 7), for a forwarded request with the principal the broker forwarded.
2. Each admin request is validated against the latest image (kraftd.controller.topics / partitions), all records of
   one request appended as one atomic batch, answered after commit; NOT_CONTROLLER per topic when this node is
   not the active controller.
"""

from __future__ import annotations

import logging
from typing import Any

from generated.create_partitions_request import CreatePartitionsRequest
from generated.create_partitions_response import CreatePartitionsResponse, CreatePartitionsTopicResult
from generated.create_topics_request import CreateTopicsRequest
from generated.create_topics_response import CreatableTopicResult, CreateTopicsResponse
from generated.delete_topics_request import DeleteTopicsRequest
from generated.delete_topics_response import DeletableTopicResult, DeleteTopicsResponse
from generated.incremental_alter_configs_request import IncrementalAlterConfigsRequest
from generated.incremental_alter_configs_response import (
    AlterConfigsResourceResponse,
    IncrementalAlterConfigsResponse,
)
from generated.messages import ApiKey
from generated.update_features_request import UpdateFeaturesRequest
from generated.update_features_response import UpdatableFeatureResult, UpdateFeaturesResponse
from kraftd.controller import configs, partitions, topics
from kraftd.controller.features import KRAFT_VERSION
from kraftd.core.events import Tick
from kraftd.shell.controller import partition_admin
from kraftd.shell.controller.glue import ControllerPort
from kwire.errors import ErrorCode

log = logging.getLogger("kraftd.controller")


class ControllerAdmin:
    def __init__(self, node: ControllerPort) -> None:
        self.node = node

    @property
    def machine(self) -> Any:
        return self.node.controller.machine

    async def handle(self, api_key: int, body: Any, version: int) -> Any:
        if api_key == ApiKey.CREATE_TOPICS:
            return await self._create_topics(body)
        if api_key == ApiKey.CREATE_PARTITIONS:
            return await self._create_partitions(body)
        if api_key == ApiKey.INCREMENTAL_ALTER_CONFIGS:
            return await self._alter_configs(body)
        if api_key == ApiKey.UPDATE_FEATURES:
            return await self._update_features(body)
        return await self._delete_topics(body)

    async def _create_topics(self, req: CreateTopicsRequest) -> CreateTopicsResponse:
        records, results = topics.create_topics(self.machine.latest(), req, self.node.rng)
        error = await self.node.controller.try_write(records)
        out = []
        for r in results:
            code = error if r.error == ErrorCode.NONE and error else r.error
            ok = code == ErrorCode.NONE
            out.append(
                CreatableTopicResult(
                    name=r.name,
                    topic_id=r.topic_id,
                    error_code=code,
                    error_message=r.message,
                    num_partitions=r.partitions if ok else -1,
                    replication_factor=r.replication_factor if ok else -1,
                    configs=[],
                )
            )
            if ok and not req.validate_only:
                log.info(
                    "created topic %s (%d partitions, rf %d)", r.name, r.partitions, r.replication_factor
                )
        return CreateTopicsResponse(topics=out)

    async def _create_partitions(self, req: CreatePartitionsRequest) -> CreatePartitionsResponse:
        records, results = partitions.create_partitions(self.machine.latest(), req, self.node.rng)
        error = await self.node.controller.try_write(records)
        return CreatePartitionsResponse(
            results=[
                CreatePartitionsTopicResult(
                    name=name,
                    error_code=error if code == ErrorCode.NONE and error else code,
                    error_message=message,
                )
                for name, code, message in results
            ]
        )

    async def _alter_configs(self, req: IncrementalAlterConfigsRequest) -> IncrementalAlterConfigsResponse:
        records, results = configs.incremental_alter_configs(self.machine.latest(), req)
        partition_admin.log_refusals("IncrementalAlterConfigs", results)
        error = await self.node.controller.try_write(records)
        return IncrementalAlterConfigsResponse(
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

    async def _update_features(self, req: UpdateFeaturesRequest) -> UpdateFeaturesResponse:
        updates = []
        for u in req.feature_updates:
            kind = u.upgrade_type if u.upgrade_type else 1
            if u.allow_downgrade:
                kind = 2
            updates.append((u.feature, max(u.max_version_level, 0), kind))
        # kraft.version lives in the Raft log's control records: the quorum leader changes it (kraft_upgrade),
        # after the other features' records commit; any refusal fails the whole request (all-or-nothing).
        core = self.node.core
        kraft = [(name, level) for name, level, _ in updates if name == KRAFT_VERSION]
        updates = [u for u in updates if u[0] != KRAFT_VERSION]
        checked = [(n, *core.upgrade_kraft_version(level, True)) for n, level in kraft]
        refused = any(code for _, code, _ in checked)
        records, results = partitions.update_features(
            self.machine.latest(), updates, req.validate_only or refused
        )
        error = await self.node.controller.try_write(records)
        if (
            kraft
            and not refused
            and not error
            and not any(c for _, c, _ in results)
            and not req.validate_only
        ):
            checked = [(n, *core.upgrade_kraft_version(level, False)) for n, level in kraft]
            self.node.post(Tick(self.node.now_ms()))  # the driver polls the core, which writes the batch
        results = checked + results
        first = next(((code, msg) for _, code, msg in results if code), (error, None))
        return UpdateFeaturesResponse(
            error_code=first[0],
            error_message=first[1],
            results=[
                UpdatableFeatureResult(feature=name, error_code=code or error, error_message=msg)
                for name, code, msg in results
            ],
        )

    async def _delete_topics(self, req: DeleteTopicsRequest) -> DeleteTopicsResponse:
        names = list(req.topic_names) + [t.name for t in req.topics if t.name is not None]
        ids = [t.topic_id for t in req.topics if t.name is None]
        records, results = topics.delete_topics(self.machine.latest(), names, ids)
        error = await self.node.controller.try_write(records)
        return DeleteTopicsResponse(
            responses=[
                DeletableTopicResult(
                    name=n, topic_id=tid, error_code=error if code == ErrorCode.NONE and error else code
                )
                for n, tid, code in results
            ]
        )
