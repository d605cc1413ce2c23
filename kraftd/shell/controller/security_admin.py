"""Security metadata RPCs on the controller listener, as Kafka 4.3.1's ControllerApis serves them: DescribeAcls (29),
CreateAcls (30), DeleteAcls (31), AlterClientQuotas (49), AlterUserScramCredentials (51), CreateDelegationToken
(38), RenewDelegationToken (39), ExpireDelegationToken (40). A 4.x broker forwards all but DescribeAcls in an
Envelope (it answers DescribeAcls, DescribeClientQuotas, DescribeUserScramCredentials and DescribeDelegationToken
itself, from the records it replays).

Contracts:
1. Each write is a controller operation (kraftd.controller.ops.security) over the latest image, its
   ControllerResult written and answered by kraftd.shell.controller.glue contract 5 (one atomic batch, answered
   after commit); a node that is not the active controller answers NOT_CONTROLLER in every result.
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

from generated.default_principal_data import DefaultPrincipalData
from generated.messages import ApiKey
from kraftd.controller import quotas, tokens
from kraftd.controller.ops import security as ops
from kraftd.shell.apis import not_controller
from kraftd.shell.controller.glue import ControllerPort
from kwire.errors import KraftError

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

    @property
    def enabled(self) -> bool:
        """Contract 2: an authorizer is configured."""
        return self.node.config.security.authorizer_class is not None

    def now_ms(self) -> int:
        from kraftd.shell.raft.clock import now_ms

        return now_ms()

    # ---- ACLs (contract 2) ------------------------------------------------------------------------------------
    async def describe_acls(self, req: Any, version: int, principal: str) -> Any:
        return ops.describe_acls(self.machine.committed, req, self.enabled)

    async def create_acls(self, req: Any, version: int, principal: str) -> Any:
        if not self.enabled:
            return not_controller.acl_refusal(ApiKey.CREATE_ACLS, req, enabled=False)
        return await self.node.controller.run(ops.create_acls(self.machine.latest(), req, self.node.rng))

    async def delete_acls(self, req: Any, version: int, principal: str) -> Any:
        if not self.enabled:
            return not_controller.acl_refusal(ApiKey.DELETE_ACLS, req, enabled=False)
        return await self.node.controller.run(ops.delete_acls(self.machine.latest(), req))

    # ---- client quotas (contract 5) ---------------------------------------------------------------------------
    async def alter_client_quotas(self, req: Any, version: int, principal: str) -> Any:
        resolved = await self._resolve_ips(req)
        result = ops.alter_client_quotas(self.machine.latest(), req, resolved.__contains__)
        return await self.node.controller.run(result)

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
    async def alter_scram(self, req: Any, version: int, principal: str) -> Any:
        return await self.node.controller.run(ops.alter_scram(self.machine.latest(), req))

    # ---- delegation tokens (contracts 3, 4) -------------------------------------------------------------------
    async def create_token(self, req: Any, version: int, principal: str) -> Any:
        image, now = self.machine.latest(), self.now_ms()
        result = ops.create_token(image, self.settings, req, principal, now, self.node.rng, version)
        return await self.node.controller.run(result)

    async def renew_token(self, req: Any, version: int, principal: str) -> Any:
        result = ops.renew_token(self.machine.latest(), self.settings, req, principal, self.now_ms())
        return await self.node.controller.run(result)

    async def expire_token(self, req: Any, version: int, principal: str) -> Any:
        result = ops.expire_token(self.machine.latest(), self.settings, req, principal, self.now_ms())
        return await self.node.controller.run(result)

    async def run_sweeper(self) -> None:
        """Contract 4."""
        while True:
            await asyncio.sleep(max(self.settings.expiry_check_interval_ms, 1) / 1000)
            if not self.machine.active or self.settings.secret_key is None:
                continue
            records = tokens.sweep(self.machine.latest(), self.now_ms())
            if records and not await self.node.controller.try_write(records):
                log.info("removed %d expired delegation token(s)", len(records))
