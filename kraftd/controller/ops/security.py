"""CreateAcls (30), DeleteAcls (31), AlterClientQuotas (49), AlterUserScramCredentials (51), CreateDelegationToken
(38), RenewDelegationToken (39), ExpireDelegationToken (40) as controller operations (kraftd.controller.result),
and DescribeAcls (29)'s answer from an image.

Contracts:
1. Validation and records are kraftd.controller.acls / quotas / scram / tokens'; a failed write answers its error
   in every entry that validation accepted.
2. DescribeAcls without an authorizer: SECURITY_DISABLED "No Authorizer is configured on the broker"; a filter
   with UNKNOWN elements: INVALID_REQUEST.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any, TypeVar

from generated import alter_client_quotas_response as acq
from generated import create_acls_response as cra
from generated import delete_acls_response as dla
from generated import describe_acls_response as dsa
from generated.alter_user_scram_credentials_response import (
    AlterUserScramCredentialsResponse,
    AlterUserScramCredentialsResult,
)
from generated.create_delegation_token_response import CreateDelegationTokenResponse
from generated.expire_delegation_token_response import ExpireDelegationTokenResponse
from generated.renew_delegation_token_response import RenewDelegationTokenResponse
from kraftd.controller import acls, quotas, scram, tokens
from kraftd.controller.image import MetadataImage
from kraftd.controller.result import ControllerResult, LogLine, from_builder
from kwire.errors import ErrorCode

T = TypeVar("T")


def acl_filter(f: Any) -> acls.AclFilter:
    """A DeleteAcls filter or a DescribeAcls request as a binding filter."""
    return acls.AclFilter(
        resource_type=f.resource_type_filter,
        resource_name=f.resource_name_filter,
        pattern_type=f.pattern_type_filter,
        principal=f.principal_filter,
        host=f.host_filter,
        operation=f.operation,
        permission_type=f.permission_type,
    )


def create_acls(
    image: MetadataImage, req: Any, rng: random.Random
) -> ControllerResult[cra.CreateAclsResponse]:
    records, results = acls.create_acls(image, req.creations, rng)
    done: list[LogLine] = [("created %d ACL(s)", (len(records),))] if records else []
    return from_builder(
        records,
        lambda error: cra.CreateAclsResponse(
            results=[
                cra.AclCreationResult(error_code=code or error, error_message=msg) for code, msg in results
            ]
        ),
        done=done,
    )


def delete_acls(image: MetadataImage, req: Any) -> ControllerResult[dla.DeleteAclsResponse]:
    records, outcomes = acls.delete_acls(image, [acl_filter(f) for f in req.filters])
    done: list[LogLine] = [("deleted %d ACL(s)", (len(records),))] if records else []
    return from_builder(
        records,
        lambda error: dla.DeleteAclsResponse(
            filter_results=[
                dla.DeleteAclsFilterResult(
                    error_code=o.error or error,
                    error_message=o.message,
                    matching_acls=[_matching(a) for a in o.matches] if not (o.error or error) else [],
                )
                for o in outcomes
            ]
        ),
        done=done,
    )


def describe_acls(image: MetadataImage, req: Any, enabled: bool) -> dsa.DescribeAclsResponse:
    """Contract 2 (a read: the shell gives it the committed image)."""
    if not enabled:
        return dsa.DescribeAclsResponse(
            error_code=ErrorCode.SECURITY_DISABLED, error_message="No Authorizer is configured on the broker"
        )
    f = acl_filter(req)
    if f.unknown:
        return dsa.DescribeAclsResponse(
            error_code=ErrorCode.INVALID_REQUEST, error_message="Filter contains UNKNOWN elements"
        )
    groups = acls.describe_acls(image, f)
    return dsa.DescribeAclsResponse(
        error_code=ErrorCode.NONE,
        error_message=None,
        resources=[
            dsa.DescribeAclsResource(
                resource_type=rtype,
                resource_name=name,
                pattern_type=ptype,
                acls=[
                    dsa.AclDescription(
                        principal=a.principal,
                        host=a.host,
                        operation=a.operation,
                        permission_type=a.permission_type,
                    )
                    for a in group
                ],
            )
            for (rtype, name, ptype), group in groups.items()
        ],
    )


def alter_client_quotas(
    image: MetadataImage, req: Any, resolvable: Callable[[str], bool]
) -> ControllerResult[acq.AlterClientQuotasResponse]:
    """validate_only writes nothing (and answers as if written)."""
    records, results = quotas.alter_client_quotas(image, req.entries, resolvable)
    if req.validate_only:
        records = []
    done: list[LogLine] = [("altered client quotas: %d record(s)", (len(records),))] if records else []
    return from_builder(
        records,
        lambda error: acq.AlterClientQuotasResponse(
            entries=[
                acq.EntryData(
                    error_code=code or error,
                    error_message=message,
                    entity=[acq.EntityData(entity_type=t, entity_name=n) for t, n in entity],
                )
                for entity, code, message in results
            ]
        ),
        done=done,
    )


def alter_scram(image: MetadataImage, req: Any) -> ControllerResult[AlterUserScramCredentialsResponse]:
    records, results = scram.alter_credentials(image, req)
    done: list[LogLine] = [("altered SCRAM credentials of %d user(s)", (len(records),))] if records else []
    return from_builder(
        records,
        lambda error: AlterUserScramCredentialsResponse(
            results=[
                AlterUserScramCredentialsResult(user=user, error_code=code or error, error_message=message)
                for user, code, message in results
            ]
        ),
        done=done,
    )


def create_token(
    image: MetadataImage,
    settings: tokens.TokenSettings,
    req: Any,
    principal: str,
    now_ms: int,
    rng: random.Random,
    version: int = 3,
) -> ControllerResult[CreateDelegationTokenResponse]:
    """The requester fields exist from v3 (KIP-373); below it they stay unset, as Kafka's prepareResponse leaves
    them (a set value cannot be written at v1-2)."""
    out, owner = tokens.create(image, settings, req, principal, now_ms, rng)
    ptype, _, pname = principal.partition(":") if version >= 3 else ("", "", "")
    otype, _, oname = owner.partition(":")

    def build(error: ErrorCode) -> CreateDelegationTokenResponse:
        error = out.error or error
        ok = error == ErrorCode.NONE
        return CreateDelegationTokenResponse(
            error_code=error,
            principal_type=otype,
            principal_name=oname,
            token_requester_principal_type=ptype,
            token_requester_principal_name=pname,
            issue_timestamp_ms=now_ms if ok else 0,
            expiry_timestamp_ms=out.expiry_ms if ok else 0,
            max_timestamp_ms=out.record.max_timestamp if ok else 0,
            token_id=out.record.token_id if ok else "",
            hmac=out.hmac if ok else b"",
        )

    done: list[LogLine] = []
    if not out.error:
        done = [("created delegation token %s for %s", (out.record.token_id, owner))]
    return from_builder(out.records, build, done=done)


def renew_token(
    image: MetadataImage, settings: tokens.TokenSettings, req: Any, principal: str, now_ms: int
) -> ControllerResult[RenewDelegationTokenResponse]:
    out = tokens.renew(image, settings, req.hmac, req.renew_period_ms, principal, now_ms)
    return _expiry_result(out, RenewDelegationTokenResponse)


def expire_token(
    image: MetadataImage, settings: tokens.TokenSettings, req: Any, principal: str, now_ms: int
) -> ControllerResult[ExpireDelegationTokenResponse]:
    out = tokens.expire(image, settings, req.hmac, req.expiry_time_period_ms, principal, now_ms)
    return _expiry_result(out, ExpireDelegationTokenResponse)


def _expiry_result(out: Any, response: Callable[..., T]) -> ControllerResult[T]:
    """Renew and expire answer alike: the error, and the new expiry when the change committed."""

    def build(error: ErrorCode) -> T:
        code = out.error or error
        return response(error_code=code, expiry_timestamp_ms=0 if code else out.expiry_ms)

    return from_builder(out.records, build)


def _matching(a: Any) -> dla.DeleteAclsMatchingAcl:
    return dla.DeleteAclsMatchingAcl(
        error_code=ErrorCode.NONE,
        error_message=None,
        resource_type=a.resource_type,
        resource_name=a.resource_name,
        pattern_type=a.pattern_type,
        principal=a.principal,
        host=a.host,
        operation=a.operation,
        permission_type=a.permission_type,
    )
