"""Answers to requests the authorizer refused (kwire.server contract 8), for every API the controller serves.

Contracts:
1. Cluster-level refusals carry CLUSTER_AUTHORIZATION_FAILED (CreateDelegationToken:
   DELEGATION_TOKEN_AUTHORIZATION_FAILED); a per-topic entry (CreateTopics, DeleteTopics,
   CreatePartitions, topic resources of AlterConfigs / IncrementalAlterConfigs / DescribeConfigs) carries
   TOPIC_AUTHORIZATION_FAILED, as Kafka's ControllerApis answers an unauthorized topic (a GROUP config resource:
   GROUP_AUTHORIZATION_FAILED).
2. Topic and config requests are decided per entry (kwire.authz contract 4a): :func:`split` keeps the
   authorized entries for the handler and :func:`merge` appends the refused entries' answers to its response,
   as Kafka's ControllerApis appends TOPIC_AUTHORIZATION_FAILED results; a request refused whole carries its
   refusal code in every entry.
3. The answer's shape is the request's: one result per entry (per creation, filter, user, entity, partition);
   where the response version has a top-level error code it is set too.
"""

from __future__ import annotations

import copy
from typing import Any

from generated import alter_client_quotas_response as acq
from generated import alter_configs_response as alc
from generated import create_acls_response as cra
from generated import create_partitions_response as cpr
from generated import create_topics_response as ctr
from generated import delete_acls_response as dla
from generated import delete_topics_response as dtr
from generated import elect_leaders_response as elr
from generated import incremental_alter_configs_response as iac
from generated.alter_user_scram_credentials_response import (
    AlterUserScramCredentialsResponse,
    AlterUserScramCredentialsResult,
)
from generated.create_delegation_token_response import CreateDelegationTokenResponse
from generated.describe_configs_response import DescribeConfigsResponse, DescribeConfigsResult
from generated.messages import API_SPECS, ApiKey
from kwire.authz import CONFIG_GROUP, CONFIG_TOPIC
from kwire.errors import ErrorCode, LocalProtocolError

CLUSTER_DENIED = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
TOPIC_DENIED = ErrorCode.TOPIC_AUTHORIZATION_FAILED


def _resource_code(resource_type: int) -> ErrorCode:
    if resource_type == CONFIG_GROUP:
        return ErrorCode.GROUP_AUTHORIZATION_FAILED
    return TOPIC_DENIED if resource_type == CONFIG_TOPIC else CLUSTER_DENIED


# api key -> (request list attribute(s), response list attribute), for the per-entry APIs (contract 2).
_ENTRIES: dict[int, tuple[tuple[str, ...], str]] = {
    ApiKey.CREATE_TOPICS: (("topics",), "topics"),
    ApiKey.DELETE_TOPICS: (("topic_names", "topics"), "responses"),
    ApiKey.CREATE_PARTITIONS: (("topics",), "results"),
    ApiKey.ALTER_CONFIGS: (("resources",), "responses"),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: (("resources",), "responses"),
    ApiKey.DESCRIBE_CONFIGS: (("resources",), "results"),
}


def split(api_key: int, req: Any, refused: frozenset[int]) -> tuple[Any, Any] | None:
    """Contract 2: (request with the authorized entries, request with the refused ones); None when every entry
    is refused or the API is not decided per entry."""
    attrs = _ENTRIES.get(api_key)
    if attrs is None:
        return None
    lists = [list(getattr(req, a)) for a in attrs[0]]
    if len(refused) >= sum(len(x) for x in lists):
        return None
    allowed, denied_part = copy.copy(req), copy.copy(req)
    index = 0
    for attr, entries in zip(attrs[0], lists, strict=True):
        keep = [e for i, e in enumerate(entries, index) if i not in refused]
        drop = [e for i, e in enumerate(entries, index) if i in refused]
        setattr(allowed, attr, keep)
        setattr(denied_part, attr, drop)
        index += len(entries)
    return allowed, denied_part


def merge(api_key: int, response: Any, refusal: Any) -> Any:
    """Contract 2: the handler's response with the refused entries' answers appended."""
    attr = _ENTRIES[api_key][1]
    setattr(response, attr, [*getattr(response, attr), *getattr(refusal, attr)])
    return response


def denied(api_key: int, req: Any, version: int = -1) -> Any:
    """Contracts 1-3 (the Raft RPCs, DescribeQuorum and DescribeCluster are kraftd.shell.apis.handlers')."""
    if api_key == ApiKey.CREATE_TOPICS:
        return ctr.CreateTopicsResponse(
            topics=[
                # Kafka's ControllerApis.createTopics: "Authorization failed." for each refused name.
                ctr.CreatableTopicResult(
                    name=t.name, error_code=TOPIC_DENIED, error_message="Authorization failed."
                )
                for t in req.topics
            ]
        )
    if api_key == ApiKey.DELETE_TOPICS:
        entries = [(n, None) for n in req.topic_names] + [(t.name, t.topic_id) for t in req.topics]
        results = []
        for name, topic_id in entries:
            r = dtr.DeletableTopicResult(name=name, error_code=TOPIC_DENIED)
            if topic_id is not None:
                r.topic_id = topic_id
            results.append(r)
        return dtr.DeleteTopicsResponse(responses=results)
    if api_key == ApiKey.CREATE_PARTITIONS:
        return cpr.CreatePartitionsResponse(
            results=[
                cpr.CreatePartitionsTopicResult(name=t.name, error_code=TOPIC_DENIED, error_message=None)
                for t in req.topics
            ]
        )
    if api_key in (ApiKey.ALTER_CONFIGS, ApiKey.INCREMENTAL_ALTER_CONFIGS):
        module: Any = alc if api_key == ApiKey.ALTER_CONFIGS else iac
        response = (
            alc.AlterConfigsResponse
            if api_key == ApiKey.ALTER_CONFIGS
            else iac.IncrementalAlterConfigsResponse
        )
        return response(
            responses=[
                module.AlterConfigsResourceResponse(
                    error_code=_resource_code(r.resource_type),
                    error_message=None,
                    resource_type=r.resource_type,
                    resource_name=r.resource_name,
                )
                for r in req.resources
            ]
        )
    if api_key == ApiKey.DESCRIBE_CONFIGS:
        return DescribeConfigsResponse(
            results=[
                DescribeConfigsResult(
                    error_code=_resource_code(r.resource_type),
                    error_message=_resource_code(r.resource_type).message,
                    resource_type=r.resource_type,
                    resource_name=r.resource_name,
                )
                for r in req.resources
            ]
        )
    if api_key == ApiKey.CREATE_ACLS:
        return cra.CreateAclsResponse(
            results=[
                cra.AclCreationResult(error_code=CLUSTER_DENIED, error_message=CLUSTER_DENIED.message)
                for _ in req.creations
            ]
        )
    if api_key == ApiKey.DELETE_ACLS:
        return dla.DeleteAclsResponse(
            filter_results=[
                dla.DeleteAclsFilterResult(error_code=CLUSTER_DENIED, error_message=CLUSTER_DENIED.message)
                for _ in req.filters
            ]
        )
    if api_key == ApiKey.ALTER_USER_SCRAM_CREDENTIALS:
        users = dict.fromkeys([d.name for d in req.deletions] + [u.name for u in req.upsertions])
        return AlterUserScramCredentialsResponse(
            results=[
                AlterUserScramCredentialsResult(
                    user=u, error_code=CLUSTER_DENIED, error_message=CLUSTER_DENIED.message
                )
                for u in users
            ]
        )
    if api_key == ApiKey.ALTER_CLIENT_QUOTAS:
        return acq.AlterClientQuotasResponse(
            entries=[
                acq.EntryData(
                    error_code=CLUSTER_DENIED,
                    error_message=CLUSTER_DENIED.message,
                    entity=[acq.EntityData(e.entity_type, e.entity_name) for e in entry.entity],
                )
                for entry in req.entries
            ]
        )
    if api_key == ApiKey.ELECT_LEADERS:
        return _elect_leaders(req, version)
    if (
        api_key == ApiKey.CREATE_DELEGATION_TOKEN
    ):  # CREATE_TOKENS on another owner refused (kwire.authz contract 6), as Kafka answers it
        code = ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED
        return CreateDelegationTokenResponse(
            error_code=code,
            principal_type=req.owner_principal_type or "",
            principal_name=req.owner_principal_name or "",
        )
    spec = API_SPECS.get(api_key)
    if spec is None:
        raise LocalProtocolError(f"no denied response for api key {api_key}")
    response = spec.response()
    if not hasattr(response, "error_code"):
        raise LocalProtocolError(f"no denied response for api key {api_key}")
    response.error_code = CLUSTER_DENIED
    if hasattr(response, "error_message"):
        response.error_message = CLUSTER_DENIED.message
    return response


def _elect_leaders(req: Any, version: int) -> elr.ElectLeadersResponse:
    """ElectLeaders v0 has no top-level error code: every named partition carries it (all versions)."""
    results = [
        elr.ReplicaElectionResult(
            topic=t.topic,
            partition_result=[
                elr.PartitionResult(p, CLUSTER_DENIED, CLUSTER_DENIED.message) for p in t.partitions
            ],
        )
        for t in req.topic_partitions or []
    ]
    top = CLUSTER_DENIED if version != 0 else ErrorCode.NONE
    return elr.ElectLeadersResponse(error_code=top, replica_election_results=results)
