"""Kafka's ConfigResource.Type codes (org.apache.kafka.common.config.ConfigResource.Type), the one place they
are defined: DescribeConfigs, AlterConfigs, IncrementalAlterConfigs and ConfigRecord carry them."""

from __future__ import annotations

from enum import IntEnum


class ConfigResourceType(IntEnum):
    UNKNOWN = 0
    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8
    CLIENT_METRICS = 16
    GROUP = 32
