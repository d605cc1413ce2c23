"""The check registry, the target context and results.

Contracts:
1. A check is an async function registered with :func:`check`: an id (``area.name``), a one-line statement of
   the behaviour, the Kafka source it follows (class.method), the APIs it needs, whether it is intrusive, and
   an optional ``by_design`` note (a documented kraftd difference the check accepts).
2. A check whose APIs the target does not advertise ends SKIP naming them; an intrusive check without
   ``--intrusive`` ends SKIP saying so. Otherwise it ends PASS when it returns, FAIL when it raises
   :class:`CheckFailed` (or any other exception: a crash of the check is a FAIL with the error as detail),
   SKIP when it raises :class:`Skip`.
3. Checks run in the order of :data:`AREAS` (registration order within an area); every result carries the
   evidence of every probe the check opened.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from tools.conformance.wire import Json, Probe


class CheckFailed(Exception):
    """The target's behaviour differs from the statement."""


class Skip(Exception):
    """The check cannot run against this target (reason in the message)."""


def expect(condition: bool, message: str) -> None:
    if not condition:
        raise CheckFailed(message)


@dataclass(frozen=True, slots=True)
class NodeInfo:
    node_id: int
    host: str
    port: int


@dataclass(slots=True)
class QuorumView:
    """What the leader's DescribeQuorum says now."""

    leader_id: int
    leader_epoch: int
    high_watermark: int
    voters: dict[int, tuple[uuid.UUID, int]]  # replica id -> (directory id, log end offset)
    observers: list[int]


@dataclass(slots=True)
class Context:
    """What discovery learnt about the target; shared by every check of a run."""

    bootstrap: tuple[str, int]
    cluster_id: str
    peer_apis: dict[int, tuple[int, int]]
    nodes: dict[int, NodeInfo]
    intrusive: bool
    timeout: float = 10.0
    supported_features: dict[str, tuple[int, int]] = field(default_factory=dict)
    finalized_features: dict[str, tuple[int, int]] = field(default_factory=dict)
    probes: list[Probe] = field(default_factory=list)
    evidence: list[Json] = field(default_factory=list)
    refresh: Callable[[], Awaitable[QuorumView]] | None = None

    def probe(self, node: NodeInfo | tuple[str, int] | None = None) -> Probe:
        """A new (unopened) probe to ``node`` (the bootstrap node by default), recorded for evidence."""
        if node is None:
            host, port = self.bootstrap
        elif isinstance(node, NodeInfo):
            host, port = node.host, node.port
        else:
            host, port = node
        p = Probe(host, port, timeout=self.timeout, evidence=self.evidence)
        self.probes.append(p)
        return p

    def common(self, api_key: int) -> tuple[int, int] | None:
        """The version range both the target and our generated codecs have, or None."""
        from generated.messages import API_SPECS

        spec, peer = API_SPECS.get(api_key), self.peer_apis.get(api_key)
        if spec is None or peer is None:
            return None
        lo, hi = max(spec.lowest_version, peer[0]), min(spec.highest_version, peer[1])
        return (lo, hi) if lo <= hi else None

    def highest(self, api_key: int) -> int:
        rng = self.common(api_key)
        if rng is None:
            raise Skip(f"no common version of api {api_key}")
        return rng[1]

    async def quorum(self) -> QuorumView:
        assert self.refresh is not None
        return await self.refresh()

    def node_for(self, node_id: int) -> NodeInfo:
        info = self.nodes.get(node_id)
        if info is None:
            raise CheckFailed(f"node {node_id} has no known endpoint")
        return info


CheckFn = Callable[[Context], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Check:
    id: str
    statement: str
    source: str
    apis: tuple[int, ...]
    intrusive: bool
    by_design: str | None
    fn: CheckFn


@dataclass(slots=True)
class Result:
    check: Check
    status: str  # PASS / FAIL / SKIP
    detail: str
    evidence: list[Json]
    seconds: float

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.check.id,
            "statement": self.check.statement,
            "source": self.check.source,
            "intrusive": self.check.intrusive,
            "by_design": self.check.by_design,
            "status": self.status,
            "detail": self.detail,
            "seconds": round(self.seconds, 3),
            "evidence": self.evidence,
        }


REGISTRY: list[Check] = []
# Run order by id prefix (model contract 3): harmless checks first, then the two that move a voter to a new epoch
# (vote.*), then the checks that must see the quorum unchanged.
AREAS = (
    "apiversions.",
    "versions.",
    "tagged.",
    "malformed.",
    "describe-",
    "vote.log-",
    "vote.one-",
    "vote.",
    "raft.",
    "begin-quorum.",
    "end-quorum.",
    "fetch.",
    "fetch-snapshot.",
    "voters.",
)


def ordered(checks: list[Check]) -> list[Check]:
    """``checks`` in run order: by area (AREAS), then registration order."""

    def rank(c: Check) -> int:
        return next((i for i, prefix in enumerate(AREAS) if c.id.startswith(prefix)), len(AREAS))

    return sorted(checks, key=rank)


def check(
    id: str,
    statement: str,
    source: str,
    *,
    apis: tuple[int, ...] = (),
    intrusive: bool = False,
    by_design: str | None = None,
) -> Callable[[CheckFn], CheckFn]:
    """Register a check (contract 1)."""

    def register(fn: CheckFn) -> CheckFn:
        if any(c.id == id for c in REGISTRY):
            raise ValueError(f"duplicate check id {id}")
        REGISTRY.append(Check(id, statement, source, apis, intrusive, by_design, fn))
        return fn

    return register
