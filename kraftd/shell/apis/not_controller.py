"""The answer of a node that is not the active controller to a leader-only API (kraftd.shell.apis.table contract
3): decided once, in kraftd.shell.apis.routing, before the API's part runs; written here in each API's own error
shape, as Kafka's controllers answer (the broker looks for the new controller and retries).

Contracts:
1. Top-level APIs (broker lifecycle, UpdateFeatures, the delegation tokens, AlterPartitionReassignments,
   ListPartitionReassignments) carry NOT_CONTROLLER at the top level; the reassignment APIs with Kafka's message.
2. Per-entry APIs carry it in every entry, in request order (DeleteTopics: the names; an id alone has no entry),
   AlterClientQuotas once per distinct entity; ElectLeaders as
   :func:`kraftd.controller.ops.partitions.elect_leaders_failed`.
3. CreateAcls and DeleteAcls without an authorizer answer SECURITY_DISABLED (with Kafka's message) instead: that
   refusal does not depend on who leads.
4. CreateDelegationToken echoes the requester's principal.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from generated import alter_client_quotas_response as acq
from generated import create_acls_response as cra
from generated import delete_acls_response as dla
from generated.allocate_producer_ids_response import AllocateProducerIdsResponse
from generated.alter_configs_response import AlterConfigsResourceResponse, AlterConfigsResponse
from generated.alter_partition_reassignments_response import AlterPartitionReassignmentsResponse
from generated.alter_partition_response import AlterPartitionResponse
from generated.alter_user_scram_credentials_response import (
    AlterUserScramCredentialsResponse,
    AlterUserScramCredentialsResult,
)
from generated.assign_replicas_to_dirs_response import AssignReplicasToDirsResponse
from generated.broker_heartbeat_response import BrokerHeartbeatResponse
from generated.broker_registration_response import BrokerRegistrationResponse
from generated.controller_registration_response import ControllerRegistrationResponse
from generated.create_delegation_token_response import CreateDelegationTokenResponse
from generated.create_partitions_response import CreatePartitionsResponse, CreatePartitionsTopicResult
from generated.create_topics_response import CreatableTopicResult, CreateTopicsResponse
from generated.delete_topics_response import DeletableTopicResult, DeleteTopicsResponse
from generated.envelope_response import EnvelopeResponse
from generated.expire_delegation_token_response import ExpireDelegationTokenResponse
from generated.incremental_alter_configs_response import AlterConfigsResourceResponse as IacResourceResponse
from generated.incremental_alter_configs_response import IncrementalAlterConfigsResponse
from generated.list_partition_reassignments_response import ListPartitionReassignmentsResponse
from generated.messages import ApiKey
from generated.renew_delegation_token_response import RenewDelegationTokenResponse
from generated.unregister_broker_response import UnregisterBrokerResponse
from generated.update_features_response import UpdateFeaturesResponse
from kraftd.controller import quotas
from kraftd.controller.ops.partitions import NOT_CONTROLLER_MESSAGE, elect_leaders_failed
from kwire.errors import ErrorCode

NOT = ErrorCode.NOT_CONTROLLER
NO_AUTHORIZER = "No Authorizer is configured."
# Contract 1: the APIs answered with nothing but the top-level code.
_TOP_LEVEL: dict[int, Callable[..., Any]] = {
    ApiKey.BROKER_REGISTRATION: BrokerRegistrationResponse,
    ApiKey.BROKER_HEARTBEAT: BrokerHeartbeatResponse,
    ApiKey.UNREGISTER_BROKER: UnregisterBrokerResponse,
    ApiKey.ALLOCATE_PRODUCER_IDS: AllocateProducerIdsResponse,
    ApiKey.ALTER_PARTITION: AlterPartitionResponse,
    ApiKey.ASSIGN_REPLICAS_TO_DIRS: AssignReplicasToDirsResponse,
    ApiKey.CONTROLLER_REGISTRATION: ControllerRegistrationResponse,
    ApiKey.RENEW_DELEGATION_TOKEN: RenewDelegationTokenResponse,
    ApiKey.EXPIRE_DELEGATION_TOKEN: ExpireDelegationTokenResponse,
}


def answer(api_key: int, req: Any, version: int, principal: str, security_enabled: bool) -> Any:
    """Contracts 1-4: the response of a non-active controller to ``req``."""
    if api_key in _TOP_LEVEL:
        return _TOP_LEVEL[api_key](error_code=NOT)
    if api_key == ApiKey.ENVELOPE:
        return EnvelopeResponse(response_data=None, error_code=NOT)
    if api_key in (ApiKey.CREATE_ACLS, ApiKey.DELETE_ACLS):
        return acl_refusal(api_key, req, security_enabled)
    if api_key == ApiKey.CREATE_DELEGATION_TOKEN:
        ptype, _, pname = principal.partition(":")
        return CreateDelegationTokenResponse(
            error_code=NOT, token_requester_principal_type=ptype, token_requester_principal_name=pname
        )
    return _PER_API[api_key](req, version)


def acl_refusal(api_key: int, req: Any, enabled: bool) -> Any:
    """Contract 3 (also the answer of an active controller without an authorizer)."""
    code = ErrorCode.SECURITY_DISABLED if not enabled else NOT
    msg = NO_AUTHORIZER if not enabled else None
    if api_key == ApiKey.CREATE_ACLS:
        return cra.CreateAclsResponse(
            results=[cra.AclCreationResult(error_code=code, error_message=msg) for _ in req.creations]
        )
    return dla.DeleteAclsResponse(
        filter_results=[dla.DeleteAclsFilterResult(error_code=code, error_message=msg) for _ in req.filters]
    )


def _create_topics(req: Any, version: int) -> CreateTopicsResponse:
    return CreateTopicsResponse(
        topics=[CreatableTopicResult(name=t.name, error_code=NOT, error_message=None) for t in req.topics]
    )


def _delete_topics(req: Any, version: int) -> DeleteTopicsResponse:
    names = list(req.topic_names) + [t.name for t in req.topics if t.name is not None]
    return DeleteTopicsResponse(responses=[DeletableTopicResult(name=n, error_code=NOT) for n in names])


def _create_partitions(req: Any, version: int) -> CreatePartitionsResponse:
    return CreatePartitionsResponse(
        results=[CreatePartitionsTopicResult(name=t.name, error_code=NOT) for t in req.topics]
    )


def _incremental_alter_configs(req: Any, version: int) -> IncrementalAlterConfigsResponse:
    return IncrementalAlterConfigsResponse(
        responses=[
            IacResourceResponse(error_code=NOT, resource_type=r.resource_type, resource_name=r.resource_name)
            for r in req.resources
        ]
    )


def _alter_configs(req: Any, version: int) -> AlterConfigsResponse:
    return AlterConfigsResponse(
        responses=[
            AlterConfigsResourceResponse(
                error_code=NOT,
                error_message=None,
                resource_type=r.resource_type,
                resource_name=r.resource_name,
            )
            for r in req.resources
        ]
    )


def _quotas(req: Any, version: int) -> acq.AlterClientQuotasResponse:
    seen = {quotas.entity_key((e.entity_type, e.entity_name) for e in x.entity) for x in req.entries}
    return acq.AlterClientQuotasResponse(
        entries=[
            acq.EntryData(
                error_code=NOT,
                error_message=None,
                entity=[acq.EntityData(entity_type=t, entity_name=n) for t, n in entity],
            )
            for entity in seen
        ]
    )


def _scram(req: Any, version: int) -> AlterUserScramCredentialsResponse:
    users = dict.fromkeys([d.name for d in req.deletions] + [u.name for u in req.upsertions])
    return AlterUserScramCredentialsResponse(
        results=[AlterUserScramCredentialsResult(user=u, error_code=NOT) for u in users]
    )


_PER_API: dict[int, Callable[[Any, int], Any]] = {
    ApiKey.CREATE_TOPICS: _create_topics,
    ApiKey.DELETE_TOPICS: _delete_topics,
    ApiKey.CREATE_PARTITIONS: _create_partitions,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: _incremental_alter_configs,
    ApiKey.UPDATE_FEATURES: lambda req, v: UpdateFeaturesResponse(error_code=NOT, error_message=None),
    ApiKey.ALTER_CONFIGS: _alter_configs,
    ApiKey.ELECT_LEADERS: lambda req, v: elect_leaders_failed(req, v, NOT),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: lambda req, v: AlterPartitionReassignmentsResponse(
        error_code=NOT, error_message=NOT_CONTROLLER_MESSAGE, responses=[]
    ),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: lambda req, v: ListPartitionReassignmentsResponse(
        error_code=NOT, error_message=NOT_CONTROLLER_MESSAGE, topics=[]
    ),
    ApiKey.ALTER_CLIENT_QUOTAS: _quotas,
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: _scram,
}
