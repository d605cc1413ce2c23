"""DescribeConfigs answered from a controller's image (kraftd.shell.raft.reads contract 4), as Kafka's controller
answers it: TOPIC (2) the topic's dynamic configs (UNKNOWN_TOPIC_OR_PARTITION when absent), BROKER (4) with an id the
broker's dynamic configs and with the empty name the cluster-wide dynamic defaults; BROKER_LOGGER (8) lists no
loggers; CLIENT_METRICS (16) and GROUP (32) every key with its value or default and Kafka's source; other types are
INVALID_REQUEST. A stale answer carries the read-only entry ``kraftd.read.consistency=stale`` (reads contract 2)."""

from __future__ import annotations

from typing import Any

from generated.describe_configs_response import (
    DescribeConfigsResourceResult,
    DescribeConfigsResult,
    DescribeConfigsSynonym,
)
from kraftd.controller import config_kinds as kinds
from kwire.errors import ErrorCode
from kwire.resources import ConfigResourceType as CR

TOPIC, BROKER, BROKER_LOGGER = int(CR.TOPIC), int(CR.BROKER), int(CR.BROKER_LOGGER)
# ConfigSource codes (Kafka's DescribeConfigsResponse.ConfigSource).
DYNAMIC_TOPIC, DYNAMIC_BROKER, DYNAMIC_DEFAULT_BROKER, STATIC_BROKER = 1, 2, 3, 4
STALE = "stale"


def describe(
    image: Any, r: Any, code: int, stale: bool, with_synonyms: bool = False
) -> DescribeConfigsResult:
    """Contract 4."""
    out = DescribeConfigsResult(
        error_code=code, error_message=None, resource_type=r.resource_type, resource_name=r.resource_name
    )
    keys = r.configuration_keys
    if code != ErrorCode.NONE:
        out.error_message = "no leader confirmed this read in time; not served from a possibly stale image"
        return out
    if r.resource_type == TOPIC:
        if r.resource_name not in image.topic_ids:
            out.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            out.error_message = f"topic {r.resource_name} does not exist"
            return out
        source = DYNAMIC_TOPIC
    elif r.resource_type == BROKER:
        if r.resource_name and not r.resource_name.isdigit():
            out.error_code = ErrorCode.INVALID_REQUEST
            out.error_message = f"broker id {r.resource_name!r} is not a number"
            return out
        source = DYNAMIC_BROKER if r.resource_name else DYNAMIC_DEFAULT_BROKER
    elif r.resource_type == BROKER_LOGGER:
        source = -1
    elif r.resource_type in (kinds.CLIENT_METRICS, kinds.GROUP):
        problem, entries = kinds.describe(
            r.resource_type, r.resource_name, image.configs.get((r.resource_type, r.resource_name), {})
        )
        if problem is not None:
            out.error_code, out.error_message = problem
            return out
        out.configs = [
            _entry(
                k,
                v,
                src,
                [
                    DescribeConfigsSynonym(name=n, value=sv, source=ss)
                    for n, sv, ss in (kinds.synonyms(r.resource_type, k, v, src) if with_synonyms else [])
                ],
                config_type=t,
            )
            for k, v, src, t in entries
            if keys is None or k in keys
        ]
        return out
    else:
        out.error_code = ErrorCode.INVALID_REQUEST
        out.error_message = f"resource type {r.resource_type} is not described by a controller"
        return out
    values = {} if source < 0 else image.configs.get((r.resource_type, r.resource_name), {})
    defaults = image.configs.get((BROKER, ""), {}) if r.resource_type == BROKER and r.resource_name else {}

    def chain(k: str, v: str) -> list[DescribeConfigsSynonym]:
        if not with_synonyms:
            return []
        out = [DescribeConfigsSynonym(name=k, value=v, source=source)]
        if k in defaults:
            out.append(DescribeConfigsSynonym(name=k, value=defaults[k], source=DYNAMIC_DEFAULT_BROKER))
        return out

    out.configs = [
        _entry(k, v, source, chain(k, v)) for k, v in sorted(values.items()) if keys is None or k in keys
    ]
    if stale:
        out.configs.append(_entry("kraftd.read.consistency", STALE, STATIC_BROKER, [], read_only=True))
    return out


def _entry(
    name: str,
    value: str,
    source: int,
    synonyms: list[DescribeConfigsSynonym],
    *,
    config_type: int = 0,
    read_only: bool = False,
) -> DescribeConfigsResourceResult:
    """One DescribeConfigs entry as a controller answers it: never sensitive, no documentation."""
    return DescribeConfigsResourceResult(
        name=name,
        value=value,
        read_only=read_only,
        config_source=source,
        is_sensitive=False,
        config_type=config_type,
        documentation=None,
        synonyms=synonyms,
    )
