"""A small etcd-style datadriven interpreter for kraftd.core scenario scripts.

File format: blocks of ``command arg=value ...`` then a line ``----`` then the expected output, ended by
a blank line; ``#`` lines are comments. Messages travel only when a script says ``deliver``, so every
interleaving is explicit. Set KRAFTD_REWRITE=1 to rewrite the expected outputs in place.

Commands:
  init voters=1,2,3 [observers=4] [cluster=ID]   fresh nodes at time 0
  load node=N epoch=E [leader=L] [voted=V] [log=EPOCHxCOUNT,...]   restart N from this durable state
  timeout node=N          jump N's clock to its next deadline and tick N (fires its timer)
  tick [node=N] ms=T      advance N's clock by T and tick it (default: every node); clocks are per node
  deliver [to=N] [from=N] [rounds=K]   deliver queued messages (K rounds; each round's replies queue)
  drop [to=N] [from=N]    discard queued messages
  isolate node=N / heal   from now on lose every message to or from N / stop losing them
  flush [node=N]          complete every pending flush
  append node=N values=a,b    append records at the leader, then tick it
  shutdown node=N         graceful shutdown
  vote|prevote to=N from=C epoch=E last=OFFSET@EPOCH [voter=V] [cluster=X]   inject a Vote request
  fetch to=N from=F epoch=E offset=O last-epoch=LE    inject a Fetch request (maxWait 0)
  begin-quorum|end-quorum to=N leader=L epoch=E [preferred=2,3]   inject the request
  state [node=N]          role, epoch, leader, vote, log end, HWM of each node
  deadlines               each node's next timer relative to now
"""

from __future__ import annotations

import os
import random
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kraftd.core import effects as fx
from kraftd.core import messages as m
from kraftd.core.batches import data_batch
from kraftd.core.config import QuorumConfig
from kraftd.core.events import LogFlushed, RequestReceived, ResponseReceived, Shutdown, Tick
from kraftd.core.log import OffsetAndEpoch, ReplicatedLog
from kraftd.core.node import RaftNode
from kraftd.core.states import Candidate, Follower, Leader, Prospective, Resigned, Unattached
from kraftd.core.types import ElectionState, ReplicaKey, VoterSet
from kraftd.sim.describe import summary as _summary


@dataclass
class Wire:
    src: int
    dst: int
    message: Any
    request_id: int | None = None  # set for requests sent by a node
    token: int | None = None  # set for responses


@dataclass
class World:
    voters: VoterSet = field(default_factory=lambda: VoterSet.of(1))
    cluster_id: str = "dd"
    clock: dict[int, int] = field(default_factory=dict)  # each node's own clock (timers are per node)
    isolated: set[int] = field(default_factory=set)
    nodes: dict[int, RaftNode] = field(default_factory=dict)
    queue: list[Wire] = field(default_factory=list)
    tokens: dict[int, tuple[int, int | None]] = field(default_factory=dict)  # token -> (src, request id)
    flushes: dict[int, int] = field(default_factory=dict)
    next_token: int = 1
    out: list[str] = field(default_factory=list)

    def new_node(
        self, nid: int, election: ElectionState | None = None, log: ReplicatedLog | None = None
    ) -> None:
        self.nodes[nid] = RaftNode(
            local=ReplicaKey(nid),
            voters=self.voters,
            config=QuorumConfig(),
            rng=random.Random(nid),
            cluster_id=self.cluster_id,
            election_state=election,
            log=log,
            now_ms=self.clock.setdefault(nid, 0),
        )

    def step(self, nid: int, event: Any) -> None:
        node = self.nodes[nid]
        for e in node.step(event):
            self.effect(nid, e)

    def effect(self, nid: int, e: fx.Effect) -> None:
        if isinstance(e, fx.PersistElectionState):
            s = e.state
            voted = s.voted_key.id if s.voted_key else -1
            self.out.append(f"n{nid} persist epoch={s.epoch} leader={s.leader_id} voted={voted}")
        elif isinstance(e, fx.AppendBatches):
            spans = ", ".join(f"{b.base_offset}-{b.last_offset}@{b.epoch}" for b in e.batches)
            self.out.append(f"n{nid} append {spans}")
        elif isinstance(e, fx.TruncateLog):
            self.out.append(f"n{nid} truncate to {e.offset}")
        elif isinstance(e, fx.FlushLog):
            self.flushes[nid] = e.offset
        elif isinstance(e, fx.SendRequest) and self.cut(nid, e.destination):
            self.out.append(f"n{nid} -> n{e.destination} {_summary(e.message)} (lost)")
        elif isinstance(e, fx.SendRequest):
            self.queue.append(Wire(nid, e.destination, e.message, request_id=e.request_id))
            self.out.append(f"n{nid} -> n{e.destination} {_summary(e.message)}")
        elif isinstance(e, fx.SendResponse):
            src, rid = self.tokens.pop(e.token)
            if rid is None:
                self.out.append(f"n{nid} answers {_summary(e.message)}")
            elif self.cut(nid, src):
                self.out.append(f"n{nid} -> n{src} {_summary(e.message)} (lost)")
            else:
                self.queue.append(Wire(nid, src, e.message, request_id=rid, token=e.token))
                self.out.append(f"n{nid} -> n{src} {_summary(e.message)}")
        elif isinstance(e, fx.ApplyCommitted):
            self.out.append(f"n{nid} commit up to {e.high_watermark}")
        elif isinstance(e, fx.LeaderChanged):
            self.out.append(f"n{nid} leader is now {e.leader.leader_id} in epoch {e.leader.epoch}")

    def cut(self, a: int, b: int) -> bool:
        return a in self.isolated or b in self.isolated

    def inject(self, dst: int, src: int, message: Any) -> None:
        token = self.next_token
        self.next_token += 1
        self.tokens[token] = (src, None)
        self.step(dst, RequestReceived(self.clock[dst], token, message))

    def deliver(self, to: int | None, frm: int | None, kind: str | None = None) -> None:
        """Every queued message matching ``to``/``frm`` and ``kind`` (``request``/``response``: one kind may
        overtake the other, as on two connections)."""
        batch = [
            w
            for w in self.queue
            if (to is None or w.dst == to)
            and (frm is None or w.src == frm)
            and (kind is None or (w.token is None) == (kind == "request"))
        ]
        self.queue = [w for w in self.queue if w not in batch]
        for w in batch:
            if w.token is not None:
                self.step(w.dst, ResponseReceived(self.clock[w.dst], w.src, w.request_id or 0, w.message))
            else:
                token = self.next_token
                self.next_token += 1
                self.tokens[token] = (w.src, w.request_id)
                self.step(w.dst, RequestReceived(self.clock[w.dst], token, w.message))


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def _deadline(node: RaftNode) -> tuple[str, int]:
    d = node.data
    if isinstance(d, Follower):
        return "fetch", d.fetch_deadline
    if isinstance(d, Leader) and d.drain_deadline is not None:
        return "resign", min(d.drain_deadline, d.check_quorum_deadline)
    if isinstance(d, Leader):
        return "check-quorum", d.check_quorum_deadline
    if isinstance(d, Candidate) and d.backoff_until is not None:
        return "backoff", d.backoff_until
    if isinstance(d, Prospective) and d.votes_not_before > node.now:
        return "pre-vote delay", d.votes_not_before
    assert isinstance(d, Unattached | Prospective | Candidate | Resigned)
    return "election", d.election_deadline


def _state(nid: int, n: RaftNode) -> str:
    voted = n.election.voted_key.id if n.election.voted_key else -1
    return (
        f"n{nid}: {n.role.value} epoch={n.epoch} leader={n.leader_id()} voted={voted} "
        f"log-end={n.log.end_offset}@{n.log.last_epoch} hwm={n.high_watermark}"
    )


def run_command(w: World, line: str) -> str:
    parts = shlex.split(line)
    cmd, args = parts[0], dict(p.split("=", 1) for p in parts[1:])
    w.out = []
    node = int(args["node"]) if "node" in args else None
    if cmd == "init":
        voters = _ints(args["voters"])
        w.voters = VoterSet.of(*voters)
        w.cluster_id = args.get("cluster", "dd")
        for nid in voters + _ints(args.get("observers", "")):
            w.new_node(nid)
    elif cmd == "load":
        assert node is not None
        log = ReplicatedLog()
        for spec in [s for s in args.get("log", "").split(",") if s]:
            epoch, count = (int(x) for x in spec.split("x"))
            log.append(data_batch(log.end_offset, epoch, [b"v"] * count, 0))
        voted = ReplicaKey(int(args["voted"])) if "voted" in args else None
        state = ElectionState(int(args["epoch"]), int(args.get("leader", -1)), voted)
        w.new_node(node, state, log)
        w.step(node, Tick(w.clock[node]))
    elif cmd == "timeout":
        assert node is not None
        w.clock[node] = max(w.clock[node], _deadline(w.nodes[node])[1])
        w.step(node, Tick(w.clock[node]))
    elif cmd == "tick":
        for nid in [node] if node is not None else sorted(w.nodes):
            w.clock[nid] += int(args["ms"])
            w.step(nid, Tick(w.clock[nid]))
    elif cmd == "deliver":
        for _ in range(int(args.get("rounds", 1))):
            to = int(args["to"]) if "to" in args else None
            frm = int(args["from"]) if "from" in args else None
            w.deliver(to, frm, args.get("kind"))
    elif cmd == "drop":
        to, frm = args.get("to"), args.get("from")
        w.queue = [
            q
            for q in w.queue
            if not ((to is None or q.dst == int(to)) and (frm is None or q.src == int(frm)))
        ]
    elif cmd == "flush":
        for nid in [node] if node is not None else sorted(w.flushes):
            if nid in w.flushes:
                w.step(nid, LogFlushed(w.clock[nid], w.flushes.pop(nid)))
    elif cmd == "append":
        assert node is not None
        r = w.nodes[node].append([v.encode() for v in args["values"].split(",")])
        w.out.append(f"offsets {r.first}-{r.last} in epoch {r.epoch}")
        w.clock[node] += w.nodes[node].config.append_linger_ms
        w.step(node, Tick(w.clock[node]))
    elif cmd == "shutdown":
        assert node is not None
        w.step(node, Shutdown(w.clock[node]))
    elif cmd in ("vote", "prevote"):
        off, ep = (int(x) for x in args["last"].split("@"))
        frm = int(args["from"])
        req = m.vote_request(
            args.get("cluster", w.cluster_id),
            ReplicaKey(int(args.get("voter", args["to"]))),
            int(args["epoch"]),
            ReplicaKey(frm),
            OffsetAndEpoch(off, ep),
            cmd == "prevote",
        )
        w.inject(int(args["to"]), frm, req)
    elif cmd == "fetch":
        frm = int(args["from"])
        req = m.fetch_request(
            w.cluster_id,
            ReplicaKey(frm),
            int(args["epoch"]),
            int(args["offset"]),
            int(args["last-epoch"]),
            0,
            8 << 20,
            0,
        )
        w.inject(int(args["to"]), frm, req)
    elif cmd in ("begin-quorum", "end-quorum"):
        to, leader, epoch = int(args["to"]), int(args["leader"]), int(args["epoch"])
        if cmd == "begin-quorum":
            req = m.begin_quorum_request(w.cluster_id, ReplicaKey(to), leader, epoch)
        else:
            pref = [ReplicaKey(i) for i in _ints(args.get("preferred", ""))]
            req = m.end_quorum_request(w.cluster_id, leader, epoch, pref)
        w.inject(to, leader, req)
    elif cmd == "isolate":
        assert node is not None
        w.isolated.add(node)
    elif cmd == "heal":
        w.isolated.clear()
    elif cmd == "state":
        for nid in [node] if node is not None else sorted(w.nodes):
            w.out.append(_state(nid, w.nodes[nid]))
    elif cmd == "deadlines":
        for nid in sorted(w.nodes):
            kind, at = _deadline(w.nodes[nid])
            w.out.append(f"n{nid}: {kind} in {at - w.clock[nid]} ms")
    else:
        raise ValueError(f"unknown command {cmd!r}")
    return "\n".join(w.out)


def run_file(path: Path) -> list[tuple[str, str, str]]:
    """Run every block; return (command, expected, actual) triples. Rewrites the file when asked."""
    lines = path.read_text().splitlines()
    w = World()
    results: list[tuple[str, str, str]] = []
    rewritten: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip() or line.startswith("#"):
            rewritten.append(line)
            i += 1
            continue
        assert lines[i + 1] == "----", f"{path}:{i + 2}: expected ----"
        j = i + 2
        expected: list[str] = []
        while j < len(lines) and lines[j].strip():
            expected.append(lines[j])
            j += 1
        actual = run_command(w, line)
        results.append((line, "\n".join(expected), actual))
        rewritten += [line, "----", *([actual] if actual else [])]
        i = j
    if os.environ.get("KRAFTD_REWRITE"):
        path.write_text("\n".join(rewritten) + "\n")
    return results
