"""DescribeConfigs answers from an image (kraftd.shell.raft.reads contract 4), without processes."""

from __future__ import annotations

import uuid

from immutables import Map

from generated.describe_configs_request import DescribeConfigsResource
from kraftd.controller.image import MetadataImage, TopicState
from kraftd.shell.raft.config_answers import describe
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
    topic = describe(img, res(2, "t"), ErrorCode.NONE, False)
    assert topic.error_code == 0
    assert [(c.name, c.value, c.config_source) for c in topic.configs] == [
        ("cleanup.policy", "compact", 1),
        ("retention.ms", "10", 1),
    ]
    assert [c.name for c in describe(img, res(2, "t", ["retention.ms"]), 0, False).configs] == [
        "retention.ms"
    ]
    default = describe(img, res(4, ""), 0, False)
    assert [(c.name, c.config_source) for c in default.configs] == [("log.retention.ms", 3)]
    broker = describe(img, res(4, "1"), 0, False)
    assert [(c.name, c.config_source) for c in broker.configs] == [("log.cleaner.threads", 2)]
    assert describe(img, res(8, "1"), 0, False).configs == []


def test_errors_and_the_stale_marker() -> None:
    img = image()
    assert describe(img, res(2, "nope"), 0, False).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert describe(img, res(4, "x"), 0, False).error_code == ErrorCode.INVALID_REQUEST
    assert describe(img, res(16, ""), 0, False).error_code == ErrorCode.INVALID_REQUEST
    assert describe(img, res(64, "x"), 0, False).error_code == ErrorCode.INVALID_REQUEST
    failed = describe(img, res(2, "t"), ErrorCode.REQUEST_TIMED_OUT, False)
    assert failed.error_code == ErrorCode.REQUEST_TIMED_OUT and failed.configs == []
    stale = describe(img, res(4, "1"), 0, True)
    assert ("kraftd.read.consistency", "stale", True) in [
        (c.name, c.value, c.read_only) for c in stale.configs
    ]


def test_client_metrics_and_groups_with_defaults_and_synonyms() -> None:
    """CLIENT_METRICS (16) and GROUP (32): every key, Kafka's sources (7/8 set, 5 default) and synonyms."""
    img = image()
    img.configs = img.configs.update(
        {
            (16, "m"): Map({"metrics": "a.", "interval.ms": "10000"}),
            (32, "g"): Map({"consumer.session.timeout.ms": "50000"}),
        }
    )
    cm = describe(img, res(16, "m"), 0, False, True)
    assert [(c.name, c.value, c.config_source, c.config_type) for c in cm.configs] == [
        ("metrics", "a.", 7, 7),
        ("interval.ms", "10000", 7, 3),
        ("match", "", 5, 7),
    ]
    assert [(y.name, y.value, y.source) for y in cm.configs[0].synonyms] == [("metrics", "a.", 7)]
    group = describe(img, res(32, "g", ["consumer.session.timeout.ms"]), 0, False, True)
    (entry,) = group.configs
    assert (entry.value, entry.config_source) == ("50000", 8)
    assert [(y.name, y.value, y.source) for y in entry.synonyms] == [
        ("consumer.session.timeout.ms", "50000", 8),
        ("group.consumer.session.timeout.ms", "45000", 5),
    ]
    # broker resources: the entry's own level, then the cluster-wide default of the same key
    img.configs = img.configs.set((4, ""), img.configs[(4, "")].set("log.cleaner.threads", "1"))
    (threads,) = describe(img, res(4, "1"), 0, False, True).configs
    assert [(y.value, y.source) for y in threads.synonyms] == [("2", 2), ("1", 3)]
