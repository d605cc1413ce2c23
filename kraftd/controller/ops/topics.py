"""CreateTopics (19), DeleteTopics (20), CreatePartitions (37), IncrementalAlterConfigs (44), UpdateFeatures (57)
as controller operations (kraftd.controller.result).

Contracts:
1. A result that failed to write answers every entry that would have succeeded with the write's error
   (NOT_CONTROLLER); entries refused by validation keep their own error.
2. CreateTopics: a topic that is not created answers -1 partitions and replication factor; each created topic
   (not validate_only) is one "created topic" info line once committed.
3. UpdateFeatures: kraft.version is checked and upgraded by the Raft quorum (the shell asks it); its results
   come first, and the top-level error is the first entry's error, else the write's.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Sequence
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
from generated.update_features_request import UpdateFeaturesRequest
from generated.update_features_response import UpdatableFeatureResult, UpdateFeaturesResponse
from kraftd.controller import configs, partitions, topics
from kraftd.controller.image import MetadataImage
from kraftd.controller.ops.partitions import refusal_notes
from kraftd.controller.result import ControllerResult, LogLine, from_builder
from kwire.errors import ErrorCode

FeatureResult = tuple[str, int, str | None]  # (feature, error code, message)


def create_topics(
    image: MetadataImage, req: CreateTopicsRequest, rng: random.Random
) -> ControllerResult[CreateTopicsResponse]:
    """Contracts 1, 2."""
    return created_topics(req, *topics.create_topics(image, req, rng))


def created_topics(
    req: CreateTopicsRequest, records: list[Any], results: Sequence[topics.TopicResult]
) -> ControllerResult[CreateTopicsResponse]:
    """Contracts 1, 2 for what kraftd.controller.topics computed (in steps: its contract 4)."""

    def build(error: ErrorCode) -> CreateTopicsResponse:
        out = []
        for r in results:
            code = r.error or error
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
        return CreateTopicsResponse(topics=out)

    done: list[LogLine] = []
    if not req.validate_only:
        fmt = "created topic %s (%d partitions, rf %d)"
        done = [(fmt, (r.name, r.partitions, r.replication_factor)) for r in results if not r.error]
    return from_builder(records, build, done=done)


def delete_topics(image: MetadataImage, req: DeleteTopicsRequest) -> ControllerResult[DeleteTopicsResponse]:
    names = list(req.topic_names) + [t.name for t in req.topics if t.name is not None]
    ids: list[uuid.UUID] = [t.topic_id for t in req.topics if t.name is None]
    records, results = topics.delete_topics(image, names, ids)
    return from_builder(
        records,
        lambda error: DeleteTopicsResponse(
            responses=[
                DeletableTopicResult(name=n, topic_id=tid, error_code=code or error)
                for n, tid, code in results
            ]
        ),
    )


def create_partitions(
    image: MetadataImage, req: CreatePartitionsRequest, rng: random.Random
) -> ControllerResult[CreatePartitionsResponse]:
    records, results = partitions.create_partitions(image, req, rng)
    return from_builder(
        records,
        lambda error: CreatePartitionsResponse(
            results=[
                CreatePartitionsTopicResult(name=name, error_code=code or error, error_message=message)
                for name, code, message in results
            ]
        ),
    )


def incremental_alter_configs(
    image: MetadataImage, req: IncrementalAlterConfigsRequest
) -> ControllerResult[IncrementalAlterConfigsResponse]:
    records, results = configs.incremental_alter_configs(image, req)
    return from_builder(
        records,
        lambda error: IncrementalAlterConfigsResponse(
            responses=[
                AlterConfigsResourceResponse(
                    error_code=code or error, error_message=message, resource_type=rtype, resource_name=rname
                )
                for rtype, rname, code, message in results
            ]
        ),
        notes=refusal_notes("IncrementalAlterConfigs", results),
    )


def feature_updates(req: UpdateFeaturesRequest) -> list[tuple[str, int, int]]:
    """(feature, level, upgrade type) of each update (v0's allow_downgrade is SAFE_DOWNGRADE)."""
    updates = []
    for u in req.feature_updates:
        kind = u.upgrade_type if u.upgrade_type else 1
        if u.allow_downgrade:
            kind = 2
        updates.append((u.feature, max(u.max_version_level, 0), kind))
    return updates


def update_features(
    image: MetadataImage,
    updates: list[tuple[str, int, int]],
    validate_only: bool,
    kraft: Sequence[FeatureResult],
) -> ControllerResult[UpdateFeaturesResponse]:
    """Contract 3: ``updates`` without kraft.version; ``kraft`` its checked results (any refusal refuses all)."""
    refused = any(code for _, code, _ in kraft)
    records, results = partitions.update_features(image, updates, validate_only or refused)
    return from_builder(records, lambda error: update_features_response(kraft, results, error))


def update_features_response(
    kraft: Sequence[FeatureResult], results: Sequence[FeatureResult], error: ErrorCode
) -> UpdateFeaturesResponse:
    """Contract 3."""
    every = [*kraft, *results]
    first = next(((code, msg) for _, code, msg in every if code), (error, None))
    return UpdateFeaturesResponse(
        error_code=first[0],
        error_message=first[1],
        results=[
            UpdatableFeatureResult(feature=name, error_code=code or error, error_message=msg)
            for name, code, msg in every
        ],
    )
