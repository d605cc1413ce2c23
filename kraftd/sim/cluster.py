"""The deterministic simulated cluster: nodes running the pure core on a virtual clock, an event heap,
durable storage that survives crashes, and the invariant checker hooked into effect execution.

Invariants:
1. Event-driven: the clock jumps to the next scheduled delivery, flush completion, tick or scenario action;
   ties are broken by insertion order, so a seed fully determines the run.
2. Effects of one step are executed exactly as the core's contract says: election state is durable first
   (synchronously), log effects change the volatile log, a FlushLog makes the volatile prefix durable after
   a random storage delay, then messages leave.
3. A crash discards the core and everything volatile; a restart rebuilds the core from the durable
   election state and the durable (flushed) log only. Messages to a down node or from a previous
   incarnation are lost.
"""

from __future__ import annotations

import heapq
import random
import uuid
from collections import deque
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

from generated.api_versions_request import ApiVersionsRequest
from kraftd.core import effects as fx
from kraftd.core import messages as m
from kraftd.core.config import QuorumConfig
from kraftd.core.events import (
    Event,
    LogFlushed,
    ReadsDue,
    RequestReceived,
    ResponseReceived,
    Shutdown,
    Tick,
)
from kraftd.core.log import ReplicatedLog
from kraftd.core.node import RaftNode
from kraftd.core.replication import NotLeaderError
from kraftd.core.states import Leader
from kraftd.core.types import ReplicaKey, Role, VoterSet
from kraftd.sim import membership
from kraftd.sim.describe import describe_event
from kraftd.sim.invariants import Checker, InvariantViolation
from kraftd.sim.network import Network
from kraftd.sim.storage import SimNode, Storage
from kwire.errors import ErrorCode
from kwire.records import decode_batch


class Cluster:
    def __init__(
        self,
        rng: random.Random,
        voters: list[int],
        observers: list[int],
        config: QuorumConfig,
        checker: Checker,
        max_storage_delay_ms: int = 5,
        trace_len: int = 120,
        kraft_version: int = 0,
    ) -> None:
        self.rng = rng
        self.now = 0
        self.voter_ids = voters
        self.kraft_version = kraft_version
        # kraft.version 1 (KIP-853): voters carry directory ids, so they can be removed.
        self.keys = {
            i: ReplicaKey(i, uuid.UUID(int=i + 1) if kraft_version else None) for i in [*voters, *observers]
        }
        self.voter_set = VoterSet(tuple(self.keys[i] for i in voters))
        self.config = config
        self.checker = checker
        self.net = Network(rng)
        self.max_storage_delay_ms = max_storage_delay_ms
        self.nodes = {i: SimNode(i) for i in [*voters, *observers]}
        self._heap: list[tuple[int, int, Callable[[], None]]] = []
        self._seq = 0
        # token -> requester, its incarnation, request id, server, the id the requester addressed
        self._tokens: dict[int, tuple[int, int, int, int, int]] = {}
        self._next_token = 1
        self.trace: deque[str] = deque(maxlen=trace_len)
        self.events = 0
        self.roundtrip: Callable[[Any], Any] | None = None
        self.storage_version = 0  # bumped on every change of any node's durable log
        self._durable_signature: tuple[object, ...] = ()
        # Read barriers in progress: (node, incarnation, ticket) -> committed end when the read started (12).
        self.reads: dict[tuple[int, int, int], int] = {}
        self.reads_served = 0
        # KIP-853 joiners (kraftd.sim.membership): per-node start-up voter sets and configs, bootstrap ids.
        self.start_voters: dict[int, VoterSet] = {}
        self.node_configs: dict[int, QuorumConfig] = {}
        self.bootstrap_servers: dict[int, int] = {}  # bootstrap id (-2, -3, ...) -> the node it names
        self.on_leader: Callable[[int], None] | None = None  # a scenario's hook: a node took office

    # ----- scheduling -----
    def at(self, when: int, action: Callable[[], None]) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (when, self._seq, action))

    def run_until(self, deadline: int, stop: Callable[[], bool] | None = None) -> bool:
        """Process events up to ``deadline``; return True as soon as ``stop()`` holds."""
        while self._heap and self._heap[0][0] <= deadline:
            if stop is not None and stop():
                return True
            when, _, action = heapq.heappop(self._heap)
            self.now = max(self.now, when)
            action()
            self.events += 1
        self.now = max(self.now, deadline)
        return stop is not None and stop()

    # ----- node life cycle -----
    def start(self, node_id: int) -> None:
        n = self.nodes[node_id]
        n.incarnation += 1
        snap = n.storage.snapshot
        start = n.storage.batches[0].base_offset if n.storage.batches else 0
        if snap is not None and not n.storage.batches:
            start = snap.snapshot_id.offset
        start_epoch = snap.snapshot_id.epoch if snap is not None and snap.snapshot_id.offset == start else 0
        log = ReplicatedLog(start, start_epoch)
        for b in n.storage.batches:
            log.append(b)
        n.state = []
        n.core = RaftNode(
            snapshot=snap,
            local=self.keys[node_id],
            voters=self.start_voters.get(node_id, self.voter_set),
            kraft_version=self.kraft_version,
            config=self.node_configs.get(node_id, self.config),
            rng=random.Random(self.rng.getrandbits(32)),
            cluster_id="sim",
            election_state=n.storage.election,
            log=log,
            now_ms=self.now,
        )
        self.trace.append(
            f"{self.now:>7} n{node_id} start epoch={n.storage.election.epoch} log={log.end_offset}"
        )
        self.deliver(node_id, Tick(self.now))

    def crash(self, node_id: int, lose_state: bool = False) -> None:
        n = self.nodes[node_id]
        n.core = None
        n.tick_at = None
        n.incarnation += 1
        if lose_state:
            n.storage = Storage()
            self.storage_version += 1
        self.trace.append(f"{self.now:>7} n{node_id} CRASH{' and lose all data' if lose_state else ''}")

    def is_up(self, node_id: int) -> bool:
        return self.nodes[node_id].core is not None

    def start_down(self, ids: Iterable[int] | None = None) -> None:
        """Start every node of ``ids`` (default: all) that is down."""
        for i in list(self.nodes) if ids is None else ids:
            if not self.is_up(i):
                self.start(i)

    def split_at_random(self, rng: random.Random, ids: list[int]) -> None:
        """Partition ``ids`` into two non-empty random sides (shuffles ``ids``)."""
        rng.shuffle(ids)
        k = rng.randint(1, len(ids) - 1)
        self.net.split(ids[:k], ids[k:])

    def shutdown(self, node_id: int) -> None:
        self.trace.append(f"{self.now:>7} n{node_id} graceful shutdown")
        self.deliver(node_id, Shutdown(self.now))

    def read(self, node_id: int) -> None:
        """A client reads at ``node_id``: a read barrier (kraftd.core.reads), checked by invariant (12)."""
        n = self.nodes[node_id]
        if n.core is None:
            return
        ticket = n.core.read_barrier()
        self.reads[(node_id, n.incarnation, ticket)] = self.checker.committed_end
        self.deliver(node_id, ReadsDue(self.now))  # as the shell does (kraftd.core.reads invariant 7)

    def append(self, node_id: int, records: list[bytes]) -> tuple[int, int] | None:
        core = self.nodes[node_id].core
        if core is None:
            return None
        try:
            r = core.append(records)
        except NotLeaderError:
            return None
        self.deliver(node_id, Tick(self.now))
        return (r.last, r.epoch)

    def snapshot(self, node_id: int) -> bool:
        """The node's state machine snapshots everything it has applied (KIP-630); False when it cannot."""
        n = self.nodes[node_id]
        core = n.core
        if core is None:
            return False
        latest = core.snapshot.snapshot_id.offset if core.snapshot is not None else 0
        if core.applied <= latest or core.applied < core.log.start_offset:
            return False
        core.create_snapshot(core.applied, list(n.state))
        self.trace.append(f"{self.now:>7} n{node_id} snapshot at {core.applied}")
        self.deliver(node_id, Tick(self.now))
        return True

    # ----- stepping a node -----
    def deliver(self, node_id: int, event: Event) -> None:
        n = self.nodes[node_id]
        core = n.core
        if core is None:
            return
        before_role = core.role
        if isinstance(event, ResponseReceived):
            self._check_fetch_response(node_id, core, event)
        out = core.step(event)
        self.trace.append(
            f"{self.now:>7} n{node_id} {describe_event(event)} -> {core.role.value} e{core.epoch}"
        )
        self._execute(n, core, out, event)
        if core.role is Role.LEADER:
            if before_role is not Role.LEADER:
                snap_end = core.snapshot.snapshot_id.offset if core.snapshot is not None else 0
                self.checker.on_new_leader(node_id, core.epoch, core.log.batches, snap_end)
                if self.on_leader is not None:
                    self.on_leader(node_id)
            self.checker.on_leader_hwm(node_id, core.epoch, core.high_watermark)
        self.check_durable()

    def _check_fetch_response(self, node_id: int, core: RaftNode, ev: ResponseReceived) -> None:
        """Invariant (11), over the responses the core will act on (those it still awaits)."""
        pending = core.inflight.get(ev.request_id)
        if pending is None or pending.destination != ev.source or not isinstance(ev.message, m.FetchResponse):
            return
        part = m.single_partition(ev.message)
        if part is not None and part.error_code == 0 and part.current_leader.leader_epoch == core.epoch:
            self.checker.on_fetch_response(node_id, core.high_watermark, ev.source, part.high_watermark)

    def check_durable(self) -> None:
        """Invariants (4) and (7); re-evaluated only when an input to them changed."""
        cores = [
            (i, n.core) for i, n in self.nodes.items() if n.core is not None and n.core.role is Role.LEADER
        ]
        leaders = [(i, core.high_watermark, core.log.batches) for i, core in cores]
        voters = {i: core.voters.ids for i, core in cores}
        signature = (
            tuple((i, h, voters[i]) for i, h, _ in leaders),
            len(self.checker.committed),
            self.storage_version,
        )
        if signature == self._durable_signature:
            return
        self._durable_signature = signature
        durable = {i: n.storage.batches for i, n in self.nodes.items()}
        ends = {i: n.storage.snapshot.snapshot_id.offset for i, n in self.nodes.items() if n.storage.snapshot}
        self.checker.check_durable(durable, leaders, ends, voters)

    def _execute(self, n: SimNode, core: RaftNode, out: list[fx.Effect], event: Event) -> None:
        nid = n.node_id
        sent = False
        for e in out:
            if isinstance(e, fx.SendRequest | fx.SendResponse):
                sent = True
            elif isinstance(e, fx.PersistElectionState) and sent:
                raise InvariantViolation(0, f"node {nid} persisted election state after sending (contract 2)")
            if isinstance(e, fx.PersistElectionState):
                self.checker.on_persist(nid, n.storage.election, e.state)
                if (
                    isinstance(event, RequestReceived)
                    and isinstance(event.message, m.VoteRequest)
                    and event.message.topics[0].partitions[0].pre_vote
                    and e.state.epoch == n.storage.election.epoch
                    and e.state.voted_key != n.storage.election.voted_key
                ):
                    raise InvariantViolation(8, f"node {nid} persisted a vote answering a pre-vote")
                n.storage.election = e.state
            elif isinstance(e, fx.AppendBatches):
                self.checker.on_append(nid, core.log.batches, len(e.batches))
                if isinstance(core.data, Leader):
                    membership.check_voter_change(self, nid, core, core.data, e.batches)
            elif isinstance(e, fx.TruncateLog):
                removed = [b for b in n.storage.batches if b.next_offset > e.offset]
                self.checker.on_truncate(nid, removed, core.high_watermark)
                n.storage.batches = [b for b in n.storage.batches if b.next_offset <= e.offset]
                self.storage_version += 1
            elif isinstance(e, fx.FlushLog):
                delay = self.rng.randint(0, self.max_storage_delay_ms)
                inc = n.incarnation
                self.at(self.now + delay, partial(self._flushed, n, inc, e.offset))
            elif isinstance(e, fx.SendRequest):
                if isinstance(e.message, m.VoteRequest):
                    part = e.message.topics[0].partitions[0]
                    if part.pre_vote:
                        self.checker.on_prevote_sent(nid, part.replica_epoch, n.storage.election.epoch)
                self._send_request(n, e)
            elif isinstance(e, fx.SendResponse):
                self._send_response(nid, e)
            elif isinstance(e, fx.ApplyCommitted):
                self.checker.on_apply(nid, e.batches, core.log.batches)
                for b in e.batches:
                    if not b.is_control:
                        n.state.extend(r.value or b"" for r in decode_batch(b.data, verify_crc=False).records)
            elif isinstance(e, fx.SnapshotLoaded):
                n.state = e.snapshot.values()
            elif isinstance(e, fx.ReadResolved):
                start = self.reads.pop((nid, n.incarnation, e.ticket), None)
                if start is not None and e.error == 0:
                    self.reads_served += 1
                    self.checker.on_read(nid, start, core.applied)
            elif isinstance(e, fx.WriteSnapshot | fx.InstallSnapshot):
                sid = e.snapshot.snapshot_id
                self.checker.on_snapshot(nid, sid.offset, e.snapshot.values())
                n.storage.snapshot = e.snapshot
                if isinstance(e, fx.InstallSnapshot):
                    n.storage.batches = []
                self.storage_version += 1
            elif isinstance(e, fx.DeleteLogBefore):
                n.storage.batches = [b for b in n.storage.batches if b.base_offset >= e.offset]
                self.storage_version += 1
            elif isinstance(e, fx.SetDeadline):
                if n.tick_at is None or e.at_ms != n.tick_at:
                    n.tick_at = e.at_ms
                    inc = n.incarnation
                    self.at(e.at_ms, partial(self._tick, n, inc, e.at_ms))

    def _tick(self, n: SimNode, inc: int, at: int) -> None:
        if n.incarnation == inc and n.tick_at == at:
            n.tick_at = None
            self.deliver(n.node_id, Tick(self.now))

    def _flushed(self, n: SimNode, inc: int, offset: int) -> None:
        if n.incarnation != inc or n.core is None:
            return
        keep = [b for b in n.core.log.batches if b.next_offset <= offset]
        if len(keep) > len(n.storage.batches):
            n.storage.batches = keep
            self.storage_version += 1
        self.deliver(n.node_id, LogFlushed(self.now, offset))

    # ----- network -----
    def _send_request(self, n: SimNode, e: fx.SendRequest) -> None:
        """``e.destination`` may be a bootstrap id (membership contract 1): the network sees the node it names,
        the answer comes back from the id the core asked."""
        src, alias, inc = n.node_id, e.destination, n.incarnation
        dst = self.bootstrap_servers.get(alias, alias)
        msg = self.roundtrip(e.message) if self.roundtrip else e.message
        if (
            dst not in self.nodes
            or (not self.is_up(dst) and self.net.reachable(src, dst))
            or self.net.disconnected()
        ):
            err = m.error_response(e.message, ErrorCode.BROKER_NOT_AVAILABLE)  # refused or reset
            self.at(
                self.now + self.rng.randint(1, 5),
                lambda: self._response(src, inc, dst, alias, e.request_id, err),
            )
            return
        for delay in self.net.delays():
            self.at(self.now + delay, lambda: self._request(src, inc, dst, alias, e.request_id, msg))

    def _request(self, src: int, src_inc: int, dst: int, alias: int, request_id: int, msg: Any) -> None:
        if not self.net.reachable(src, dst) or not self.is_up(dst):
            return
        if isinstance(msg, ApiVersionsRequest):  # answered by the shell (membership contract 2)
            resp = membership.api_versions(msg)
            for delay in self.net.delays():
                self.at(self.now + delay, lambda: self._response(src, src_inc, dst, alias, request_id, resp))
            return
        token = self._next_token
        self._next_token += 1
        self._tokens[token] = (src, src_inc, request_id, dst, alias)
        self.deliver(dst, RequestReceived(self.now, token, msg))

    def _send_response(self, server: int, e: fx.SendResponse) -> None:
        entry = self._tokens.pop(e.token, None)
        if entry is None:
            return
        src, src_inc, request_id, _, alias = entry
        msg = self.roundtrip(e.message) if self.roundtrip else e.message
        for delay in self.net.delays():
            self.at(self.now + delay, lambda: self._response(src, src_inc, server, alias, request_id, msg))

    def _response(self, dst: int, dst_inc: int, server: int, alias: int, request_id: int, msg: Any) -> None:
        if self.nodes[dst].incarnation != dst_inc or not self.net.reachable(server, dst):
            return
        self.deliver(dst, ResponseReceived(self.now, alias, request_id, msg))

    # ----- views -----
    def leaders(self) -> list[RaftNode]:
        return [n.core for n in self.nodes.values() if n.core is not None and n.core.role is Role.LEADER]

    def leader(self) -> RaftNode | None:
        ls = self.leaders()
        return max(ls, key=lambda c: c.epoch) if ls else None

    def max_epoch(self) -> int:
        return max(n.storage.election.epoch for n in self.nodes.values())
