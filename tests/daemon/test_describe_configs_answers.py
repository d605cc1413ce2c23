"""DescribeConfigs answers from an image (kraftd.shell.reads contract 4), without processes."""

from __future__ import annotations

import uuid

from immutables import Map

from generated.describe_configs_request import DescribeConfigsResource
from kraftd.controller.image import MetadataImage, TopicState
from kraftd.shell.reads import _describe
from kwire.errors import ErrorCode


def image() -> MetadataImage:
    tid = uuid.UUID(int=5)
    configs = {
        (2, "t"): Map({"retention.ms": "10", "cleanup.policy": "compact"}),
        (4, ""): Map({"log.retention.ms": "99"}),
        (4, "1"): Map({"log.cleaner.threads": "2"}),
    }
    return MetadataImage(
        topics=Map({tid: TopicState("t", tid)}), topic_ids=Map({"t": tid}), configs=Map(configs)
    )


def res(rtype: int, name: str, keys: list[str] | None = None) -> DescribeConfigsResource:
    return DescribeConfigsResource(resource_type=rtype, resource_name=name, configuration_keys=keys)


def test_topic_broker_default_and_filter() -> None:
    img = image()
    topic = _describe(img, res(2, "t"), ErrorCode.NONE, False)
    assert topic.error_code == 0
    assert [(c.name, c.value, c.config_source) for c in topic.configs] == [
        ("cleanup.policy", "compact", 1),
        ("retention.ms", "10", 1),
    ]
    assert [c.name for c in _describe(img, res(2, "t", ["retention.ms"]), 0, False).configs] == [
        "retention.ms"
    ]
    default = _describe(img, res(4, ""), 0, False)
    assert [(c.name, c.config_source) for c in default.configs] == [("log.retention.ms", 3)]
    broker = _describe(img, res(4, "1"), 0, False)
    assert [(c.name, c.config_source) for c in broker.configs] == [("log.cleaner.threads", 2)]
    assert _describe(img, res(8, "1"), 0, False).configs == []


def test_errors_and_the_stale_marker() -> None:
    img = image()
    assert _describe(img, res(2, "nope"), 0, False).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert _describe(img, res(4, "x"), 0, False).error_code == ErrorCode.INVALID_REQUEST
    assert _describe(img, res(16, "m"), 0, False).error_code == ErrorCode.INVALID_REQUEST
    failed = _describe(img, res(2, "t"), ErrorCode.REQUEST_TIMED_OUT, False)
    assert failed.error_code == ErrorCode.REQUEST_TIMED_OUT and failed.configs == []
    stale = _describe(img, res(4, "1"), 0, True)
    assert ("kraftd.read.consistency", "stale", True) in [
        (c.name, c.value, c.read_only) for c in stale.configs
    ]
