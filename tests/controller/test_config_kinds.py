"""CLIENT_METRICS (16) and GROUP (32) config resources on the controller (kraftd.controller.config_kinds,
kraftd.controller.configs contract 5).

The expected (error, message) pairs are what Kafka 4.3.1's own validators said for the same input
(ClientMetricsConfigs.validate / GroupConfig.validate with a default KafkaConfig, run from its jars); the
interop module tests/interop/test_config_resources.py compares with Kafka's controllers end to end.
"""

from __future__ import annotations

import logging
import uuid

import pytest

from generated.alter_configs_request import AlterableConfig as LegacyConfig
from generated.alter_configs_request import AlterConfigsRequest
from generated.alter_configs_request import AlterConfigsResource as LegacyResource
from generated.incremental_alter_configs_request import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
)
from kraftd.controller import config_kinds, configs
from kraftd.controller.apply import apply_record
from kraftd.controller.image import MetadataImage
from kwire.errors import ErrorCode

CM, GROUP = 16, 32
OK = (ErrorCode.NONE, None)
CONFIG, REQUEST = ErrorCode.INVALID_CONFIG, ErrorCode.INVALID_REQUEST

CLIENT_METRICS_CASES = [
    ("metrics", "org.apache.kafka.producer.", OK),
    ("metrics", "", OK),
    ("metrics", "a,,b", (CONFIG, "Configuration 'metrics' values must not be empty.")),
    ("metrics", "a,a", OK),
    ("metrics", " a , b ", OK),
    ("metrics", "*", OK),
    ("interval.ms", "99", (REQUEST, "Invalid value 99 for interval.ms, interval must be between 100 and 3600000 (1 hour)")),
    ("interval.ms", "abc", (CONFIG, "Invalid value abc for configuration interval.ms: Not a number of type INT")),
    ("interval.ms", " 1000 ", OK),
    ("interval.ms", "3600001", (REQUEST, "Invalid value 3600001 for interval.ms, interval must be between 100 and 3600000 (1 hour)")),
    ("match", "client_id=x", OK),
    ("match", "foo=x", (CONFIG, "Illegal client matching pattern: foo=x")),
    ("match", "client_id=", (CONFIG, "Illegal client matching pattern: client_id=")),
    ("match", "client_id=[", (CONFIG, "Illegal client matching pattern: client_id=[")),
    ("match", "client_id=a=b", (CONFIG, "Illegal client matching pattern: client_id=a=b")),
    ("match", "", OK),
    ("bogus", "1", (REQUEST, "Unknown client metrics configuration: bogus")),
]  # fmt: skip
_RESET = "The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'."
GROUP_CASES = [
    ("consumer.session.timeout.ms", "50000", OK),
    ("consumer.session.timeout.ms", "0", (CONFIG, "Invalid value 0 for configuration consumer.session.timeout.ms: Value must be at least 1")),
    ("consumer.session.timeout.ms", "x", (CONFIG, "Invalid value x for configuration consumer.session.timeout.ms: Not a number of type INT")),
    ("consumer.session.timeout.ms", "70000", (CONFIG, "consumer.session.timeout.ms must be less than or equal to group.consumer.max.session.timeout.ms")),
    ("consumer.heartbeat.interval.ms", "4000", (CONFIG, "consumer.heartbeat.interval.ms must be greater than or equal to group.consumer.min.heartbeat.interval.ms")),
    ("share.auto.offset.reset", "EARLIEST", (CONFIG, f"Invalid value EARLIEST for configuration share.auto.offset.reset: Invalid value `EARLIEST` for configuration share.auto.offset.reset. {_RESET}")),
    ("share.auto.offset.reset", "by_duration:PT1H", OK),
    ("share.auto.offset.reset", "by_duration:-PT1H", (CONFIG, f"Invalid value by_duration:-PT1H for configuration share.auto.offset.reset: Invalid value `by_duration:-PT1H` for configuration share.auto.offset.reset. {_RESET}")),
    ("share.auto.offset.reset", "by_duration:xx", (CONFIG, f"Invalid value by_duration:xx for configuration share.auto.offset.reset: Invalid value `by_duration:xx` for configuration share.auto.offset.reset. {_RESET}")),
    ("share.isolation.level", "READ_COMMITTED", (CONFIG, "Invalid value READ_COMMITTED for configuration share.isolation.level: String must be one of: read_committed, read_uncommitted")),
    ("share.renew.acknowledge.enable", "yes", (CONFIG, "Invalid value yes for configuration share.renew.acknowledge.enable: Expected value to be either true or false")),
    ("share.renew.acknowledge.enable", "TRUE", OK),
    ("streams.num.standby.replicas", "3", (CONFIG, "streams.num.standby.replicas must be less than or equal to group.streams.max.standby.replicas")),
    ("consumer.assignment.interval.ms", "5", OK),
    ("share.record.lock.duration.ms", "1000", (CONFIG, "share.record.lock.duration.ms must be greater than or equal to group.share.min.record.lock.duration.ms")),
    ("bogus", "1", (CONFIG, "Unknown group config name: bogus")),
    ("consumer.session.timeout.ms", " 50000 ", OK),
]  # fmt: skip


def _set(
    rtype: int, name: str, *pairs: tuple[str, str | None], op: int = 0
) -> IncrementalAlterConfigsRequest:
    return IncrementalAlterConfigsRequest(
        resources=[
            AlterConfigsResource(
                resource_type=rtype,
                resource_name=name,
                configs=[AlterableConfig(name=k, config_operation=op, value=v) for k, v in pairs],
            )
        ]
    )


def _one(
    image: MetadataImage, req: IncrementalAlterConfigsRequest
) -> tuple[list[object], tuple[object, ...]]:
    records, results = configs.incremental_alter_configs(image, req)
    return records, tuple(results[0][2:])


@pytest.mark.parametrize(("key", "value", "expected"), CLIENT_METRICS_CASES)
def test_client_metrics_validation_is_kafkas(key: str, value: str, expected: tuple[object, object]) -> None:
    records, result = _one(MetadataImage(), _set(CM, "m", (key, value)))
    assert result == expected
    assert bool(records) == (expected == OK)


@pytest.mark.parametrize(("key", "value", "expected"), GROUP_CASES)
def test_group_validation_is_kafkas(key: str, value: str, expected: tuple[object, object]) -> None:
    records, result = _one(MetadataImage(), _set(GROUP, "g", (key, value)))
    assert result == expected
    assert bool(records) == (expected == OK)


def test_resource_names_and_operations() -> None:
    image = MetadataImage()
    assert _one(image, _set(CM, "", ("metrics", "a")))[1] == (REQUEST, "Subscription name can't be empty")
    assert _one(image, _set(GROUP, "", ("consumer.session.timeout.ms", "50000")))[1] == (
        REQUEST,
        "Default group resources are not allowed.",
    )
    assert _one(image, _set(CM, "m", ("metrics", "a"), op=2))[1] == (
        CONFIG,
        "Can't APPEND to key metrics because its type is not LIST.",
    )
    assert _one(image, _set(8, "1", ("kafka", "DEBUG")))[1] == (
        REQUEST,
        "Unknown resource type BROKER_LOGGER",
    )
    # The resulting set is what is validated: a heartbeat at the session timeout is refused only together.
    records, result = _one(image, _set(GROUP, "g", ("consumer.session.timeout.ms", "50000")))
    for r in records:
        apply_record(image, 0, 4, 0, r)
    assert result == OK and dict(image.configs[(GROUP, "g")]) == {"consumer.session.timeout.ms": "50000"}
    assert _one(image, _set(GROUP, "g", ("consumer.session.timeout.ms", "50000")))[0] == []  # unchanged
    assert _one(image, _set(GROUP, "g", ("consumer.heartbeat.interval.ms", "15000")))[1] == OK
    # legacy AlterConfigs: a null value is refused with the resource kind's wording
    legacy = AlterConfigsRequest(
        resources=[
            LegacyResource(
                resource_type=GROUP, resource_name="g", configs=[LegacyConfig(name="x", value=None)]
            )
        ]
    )
    assert configs.alter_configs(image, legacy)[1][0][2:] == (
        CONFIG,
        "Null value not supported for group configs: x",
    )


def test_describe_lists_every_key_with_kafkas_source_and_default() -> None:
    problem, entries = config_kinds.describe(CM, "m", {"metrics": " a , b ", "interval.ms": "10000"})
    assert problem is None
    assert entries == [("metrics", "a,b", 7, 7), ("interval.ms", "10000", 7, 3), ("match", "", 5, 7)]
    problem, entries = config_kinds.describe(GROUP, "g", {"consumer.session.timeout.ms": "50000"})
    assert problem is None and len(entries) == 17
    assert entries[0] == ("consumer.session.timeout.ms", "50000", 8, 3)
    assert entries[1] == ("consumer.heartbeat.interval.ms", "5000", 5, 3)
    assert config_kinds.describe(GROUP, "", {})[0] == (REQUEST, "Group name must not be empty")


def test_incremental_topic_changes_are_validated_like_kafka() -> None:
    """IncrementalAlterConfigs on a TOPIC validates the resulting set (LogConfig.validate) before the existence
    check, and APPEND works only on LIST keys, starting from the default (cleanup.policy: delete)."""
    image = MetadataImage()
    assert _one(image, _set(2, "nope", ("retention.ms", "abc")))[1] == (
        CONFIG,
        "Invalid value abc for configuration retention.ms: Not a number of type LONG",
    )
    assert _one(image, _set(2, "nope", ("retention.ms", "1")))[1] == (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        "The topic 'nope' does not exist.",
    )
    assert _one(image, _set(2, "nope", ("retention.ms", "1"), op=2))[1] == (
        CONFIG,
        "Can't APPEND to key retention.ms because its type is not LIST.",
    )
    image.topic_ids = image.topic_ids.set("t", uuid.UUID(int=1))
    records, result = _one(image, _set(2, "t", ("cleanup.policy", "compact"), op=2))
    assert result == OK and [(r.name, r.value) for r in records] == [("cleanup.policy", "delete,compact")]


def test_each_refused_resource_is_one_info_line(caplog: pytest.LogCaptureFixture) -> None:
    from kraftd.controller.ops.partitions import refusal_notes

    results = configs.incremental_alter_configs(MetadataImage(), _set(GROUP, "g\nforged", ("bogus", "1")))[1]
    results += configs.incremental_alter_configs(MetadataImage(), _set(CM, "m", ("interval.ms", "10000")))[1]
    with caplog.at_level("INFO", logger="kraftd.controller"):
        for fmt, args in refusal_notes("IncrementalAlterConfigs", results):
            logging.getLogger("kraftd.controller").info(fmt, *args)
    assert [r.getMessage() for r in caplog.records] == [
        "IncrementalAlterConfigs refused GROUP 'g\\nforged': INVALID_CONFIG 'Unknown group config name: bogus'"
    ]
