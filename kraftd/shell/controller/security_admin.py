"""Security metadata RPCs on the controller listener, as Kafka 4.3.1's ControllerApis serves them: DescribeAcls (29),
CreateAcls (30), DeleteAcls (31), AlterClientQuotas (49), AlterUserScramCredentials (51), CreateDelegationToken
(38), RenewDelegationToken (39), ExpireDelegationToken (40). A 4.x broker forwards all but DescribeAcls in an
Envelope (it answers DescribeAcls, DescribeClientQuotas, DescribeUserScramCredentials and DescribeDelegationToken
itself, from the records it replays).

Contracts:
1. Validation and records are the pure functions of kraftd.controller (acls, quotas, scram, tokens); the records of
   one request are appended as one atomic batch and the answer is given after commit; a node that is not the
   active controller answers NOT_CONTROLLER in every result.
2. ACL RPCs need an authorizer (``authorizer.class.name``), as Kafka's AclApis: without one, SECURITY_DISABLED
   "No Authorizer is configured." (DescribeAcls: "No Authorizer is configured on the broker").
3. The principal of a request is the one the broker forwarded in the Envelope (Kafka's DefaultPrincipalData,
   version-prefixed), else the connection's own (kwire.server contract 9: the SASL user, the TLS subject or
   ``User:ANONYMOUS``); delegation tokens are owned and renewed by it.
4. The active controller removes expired delegation tokens every ``delegation.token.expiry.check.interval.ms``.
5. AlterClientQuotas resolves ip entity names that are not IP literals before validating (Kafka's
   InetAddress.getByName), off the event loop.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import struct
from typing import Any

from generated import alter_client_quotas_response as acq
from generated import create_acls_response as cra
from generated import delete_acls_response as dla
from generated import describe_acls_response as dsa
from generated.alter_user_scram_credentials_response import (
    AlterUserScramCredentialsResponse,
    AlterUserScramCredentialsResult,
)
from generated.create_delegation_token_response import CreateDelegationTokenResponse
from generated.default_principal_data import DefaultPrincipalData
from generated.expire_delegation_token_response import ExpireDelegationTokenResponse
from generated.messages import ApiKey
from generated.renew_delegation_token_response import RenewDelegationTokenResponse
from kraftd.controller import acls, quotas, scram, tokens
from kraftd.shell.apis import not_controller
from kraftd.shell.controller.glue import ControllerPort
from kwire.errors import ErrorCode, KraftError

log = logging.getLogger("kraftd.controller")

ANONYMOUS = "User:ANONYMOUS"


def forwarded_principal(data: bytes | None) -> str:
    """Contract 3: "Type:name" from an Envelope's RequestPrincipal (a 2-byte version, then DefaultPrincipalData)."""
    if not data or len(data) < 2:
        return ANONYMOUS
    (version,) = struct.unpack_from(">h", data, 0)
    try:
        p = DefaultPrincipalData.decode(bytes(data[2:]), version)
    except KraftError:
        return ANONYMOUS
    return f"{p.type}:{p.name}"


class ControllerSecurity:
    def __init__(self, node: ControllerPort) -> None:
        self.node = node

    @property
    def machine(self) -> Any:
        return self.node.controller.machine

    @property
    def settings(self) -> tokens.TokenSettings:
        return self.node.config.tokens

    def now_ms(self) -> int:
        from kraftd.shell.raft.clock import now_ms

        return now_ms()

    async def _write(self, records: list[Any]) -> ErrorCode:
        return await self.node.controller.try_write(records)

    async def handle(self, api_key: int, body: Any, version: int, principal: str = ANONYMOUS) -> Any:
        if api_key in (ApiKey.DESCRIBE_ACLS, ApiKey.CREATE_ACLS, ApiKey.DELETE_ACLS):
            return await self._acls(api_key, body)
        if api_key == ApiKey.ALTER_CLIENT_QUOTAS:
            return await self._quotas(body)
        if api_key == ApiKey.ALTER_USER_SCRAM_CREDENTIALS:
            return await self._scram(body)
        return await self._tokens(api_key, body, principal)

    # ---- ACLs -------------------------------------------------------------------------------------------------
    async def _acls(self, api_key: int, req: Any) -> Any:
        enabled = self.node.config.security.authorizer_class is not None
        if api_key == ApiKey.DESCRIBE_ACLS:
            return self._describe_acls(req, enabled)
        if api_key == ApiKey.CREATE_ACLS:
            if not enabled:
                return not_controller.acl_refusal(ApiKey.CREATE_ACLS, req, enabled=False)
            records, results = acls.create_acls(self.machine.latest(), req.creations, self.node.rng)
            error = await self._write(records)
            if records and not error:
                log.info("created %d ACL(s)", len(records))
            return cra.CreateAclsResponse(
                results=[
                    cra.AclCreationResult(error_code=code or error, error_message=msg)
                    for code, msg in results
                ]
            )
        filters = [_filter(f) for f in req.filters]
        if not enabled:
            return not_controller.acl_refusal(ApiKey.DELETE_ACLS, req, enabled=False)
        records, outcomes = acls.delete_acls(self.machine.latest(), filters)
        error = await self._write(records)
        if records and not error:
            log.info("deleted %d ACL(s)", len(records))
        return dla.DeleteAclsResponse(
            filter_results=[
                dla.DeleteAclsFilterResult(
                    error_code=o.error or error,
                    error_message=o.message,
                    matching_acls=[_matching(a) for a in o.matches] if not (o.error or error) else [],
                )
                for o in outcomes
            ]
        )

    def _describe_acls(self, req: Any, enabled: bool) -> dsa.DescribeAclsResponse:
        if not enabled:
            return dsa.DescribeAclsResponse(
                error_code=ErrorCode.SECURITY_DISABLED,
                error_message="No Authorizer is configured on the broker",
            )
        f = _filter(req)
        if f.unknown:
            return dsa.DescribeAclsResponse(
                error_code=ErrorCode.INVALID_REQUEST, error_message="Filter contains UNKNOWN elements"
            )
        groups = acls.describe_acls(self.machine.committed, f)
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

    # ---- client quotas ----------------------------------------------------------------------------------------
    async def _quotas(self, req: Any) -> acq.AlterClientQuotasResponse:
        resolved = await self._resolve_ips(req)
        records, results = quotas.alter_client_quotas(
            self.machine.latest(), req.entries, resolved.__contains__
        )
        error = ErrorCode.NONE if req.validate_only else await self._write(records)
        if records and not error and not req.validate_only:
            log.info("altered client quotas: %d record(s)", len(records))
        return acq.AlterClientQuotasResponse(
            entries=[
                acq.EntryData(
                    error_code=code or error,
                    error_message=message,
                    entity=[acq.EntityData(entity_type=t, entity_name=n) for t, n in entity],
                )
                for entity, code, message in results
            ]
        )

    async def _resolve_ips(self, req: Any) -> set[str]:
        """Contract 5: the ip entity names (not literals) that resolve."""
        names = {
            e.entity_name
            for x in req.entries
            for e in x.entity
            if e.entity_type == quotas.IP and e.entity_name and not quotas.is_ip_literal(e.entity_name)
        }
        loop = asyncio.get_running_loop()
        out = set()
        for name in names:
            try:
                await asyncio.wait_for(loop.getaddrinfo(name, None, type=socket.SOCK_STREAM), 5)
                out.add(name)
            except (OSError, TimeoutError):
                continue
        return out

    # ---- SCRAM ------------------------------------------------------------------------------------------------
    async def _scram(self, req: Any) -> AlterUserScramCredentialsResponse:
        records, results = scram.alter_credentials(self.machine.latest(), req)
        error = await self._write(records)
        if records and not error:
            log.info("altered SCRAM credentials of %d user(s)", len(records))
        return AlterUserScramCredentialsResponse(
            results=[
                AlterUserScramCredentialsResult(user=user, error_code=code or error, error_message=message)
                for user, code, message in results
            ]
        )

    # ---- delegation tokens ------------------------------------------------------------------------------------
    async def _tokens(self, api_key: int, req: Any, principal: str) -> Any:
        now = self.now_ms()
        if api_key == ApiKey.CREATE_DELEGATION_TOKEN:
            ptype, _, pname = principal.partition(":")
            out, owner = tokens.create(
                self.machine.latest(), self.settings, req, principal, now, self.node.rng
            )
            error = out.error or await self._write(out.records)
            otype, _, oname = owner.partition(":")
            ok = error == ErrorCode.NONE
            if ok:
                log.info("created delegation token %s for %s", out.record.token_id, owner)
            return CreateDelegationTokenResponse(
                error_code=error,
                principal_type=otype,
                principal_name=oname,
                token_requester_principal_type=ptype,
                token_requester_principal_name=pname,
                issue_timestamp_ms=now if ok else 0,
                expiry_timestamp_ms=out.expiry_ms if ok else 0,
                max_timestamp_ms=out.record.max_timestamp if ok else 0,
                token_id=out.record.token_id if ok else "",
                hmac=out.hmac if ok else b"",
            )
        response = (
            RenewDelegationTokenResponse
            if api_key == ApiKey.RENEW_DELEGATION_TOKEN
            else ExpireDelegationTokenResponse
        )
        if api_key == ApiKey.RENEW_DELEGATION_TOKEN:
            out = tokens.renew(
                self.machine.latest(), self.settings, req.hmac, req.renew_period_ms, principal, now
            )
        else:
            out = tokens.expire(
                self.machine.latest(), self.settings, req.hmac, req.expiry_time_period_ms, principal, now
            )
        error = out.error or await self._write(out.records)
        return response(error_code=error, expiry_timestamp_ms=out.expiry_ms if not error else 0)

    async def run_sweeper(self) -> None:
        """Contract 4."""
        while True:
            await asyncio.sleep(max(self.settings.expiry_check_interval_ms, 1) / 1000)
            if not self.machine.active or self.settings.secret_key is None:
                continue
            records = tokens.sweep(self.machine.latest(), self.now_ms())
            if records and not await self._write(records):
                log.info("removed %d expired delegation token(s)", len(records))


def _filter(f: Any) -> acls.AclFilter:
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
