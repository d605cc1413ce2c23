"""KIP-853 voter changes under faults. ``reconfig``: a static quorum loses voters through RemoveRaftVoter.
``membership`` (the contracts below): a kraft.version 1 quorum started from one voter (Kafka's ``--standalone``)
grows to up to five through AddRaftVoter and auto-join and shrinks back through RemoveRaftVoter, while nodes
crash (losing unflushed writes), restart and the network splits, cuts one way and drops messages.

Contracts:
1. Nodes 1-4 start as ``--no-initial-controllers`` observers that know only the bootstrap servers (every node);
   a random subset has ``controller.quorum.auto.join.enable``. Removed voters keep running as observers.
2. Phase one (no faults): the quorum grows to a random target (at least every auto-joining node) within the
   liveness bound; phase two: voter changes requested at random amid faults; phase three (healed): a grown set
   shrinks to a random smaller size (at most three) within the bound, and an auto-joining node removed there
   stays removed (KAFKA-19850).
3. The leader is never asked to remove itself (a leader removing itself is covered by tests/core and
   tests/interop; see the ``reconfig`` scenario).
4. Every invariant is on, (4) and (7) counting the voter set in force (kraftd.sim.invariants (10)).
"""

from __future__ import annotations

from kraftd.core.node import RaftNode
from kraftd.sim import membership
from kraftd.sim.cluster import Cluster
from kraftd.sim.harness import LIVENESS_BOUND_MS, Harness, ScenarioFailure

NODES = 5


def _committed_voters(lead: RaftNode) -> tuple[int, ...]:
    return lead.voter_history.committed(lead.high_watermark).ids


def _settle(h: Harness, want: set[int], what: str) -> set[int]:
    """Ask the leader for one change at a time until its committed voter set is ``want`` plus the leader itself
    (contracts 2-3); returns that set."""
    c = h.c
    deadline = c.now + 2 * LIVENESS_BOUND_MS
    while c.now < deadline:
        lead = c.leader()
        if lead is not None and not lead.voter_history.has_uncommitted(lead.high_watermark):
            target = want | {lead.local.id}
            have = set(_committed_voters(lead))
            if have == target:
                return target
            missing, extra = sorted(target - have), sorted(have - target)
            if missing:
                membership.add_voter(c, h.rng.choice(missing))
            else:
                membership.remove_voter(c, h.rng.choice(extra))
        h.run(h.rng.randint(100, 400))
    lead = c.leader()
    got = _committed_voters(lead) if lead is not None else "no leader"
    raise ScenarioFailure(f"{what}: the committed voters never became {sorted(want)} (now {got})")


def _joined(h: Harness, nodes: set[int]) -> bool:
    lead = h.c.leader()
    return lead is not None and nodes <= set(_committed_voters(lead))


def _change(h: Harness, add_bias: float = 0.55) -> None:
    """An operator asks the current leader to add an up observer or remove a voter other than itself."""
    c, rng = h.c, h.rng
    lead = c.leader()
    if lead is None:
        return
    voters = lead.voters.ids
    observers = [i for i in c.nodes if c.is_up(i) and i not in voters]
    others = [i for i in voters if i != lead.local.id]
    if observers and (not others or rng.random() < add_bias):
        membership.add_voter(c, rng.choice(observers))
    elif others:
        membership.remove_voter(c, rng.choice(others))


def _eager_operator(h: Harness, leader: int) -> None:
    """A leader took office: sometimes enough other voters crash or are cut off from it at once, maybe one way,
    that its epoch cannot commit while observers can still catch up with it, and an operator retries changes
    against it while the faults last (it must refuse them until it has committed in its epoch)."""
    c, rng = h.c, h.rng
    core = c.nodes[leader].core
    if core is None:
        return
    roll = rng.random()
    if roll < 0.4:
        others = [i for i in core.voters.ids if i != leader]
        # just enough of them that the leader and the rest are no majority
        victims = rng.sample(others, len(others) - core.voters.majority() + 2) if others else []
        kind = rng.random()
        for i in victims:
            if (
                kind < 0.5
            ):  # one way: they hear the leader (and tell observers where it is), it never hears them
                c.net.cut(i, leader)
            elif kind < 0.75:
                c.net.cut_both(i, leader)
            else:
                c.crash(i)
    if roll < 0.6:
        for _ in range(10):
            c.at(c.now + rng.randint(1, 3000), lambda: _change(h, 0.9) if c.on_leader is not None else None)


def membership_changes(h: Harness) -> None:
    rng = h.rng
    joiners = list(range(1, NODES))
    auto = {i for i in joiners if rng.random() < 0.5}

    def configure(c: Cluster) -> None:
        for i in joiners:
            membership.make_joiner(c, i, list(range(NODES)), auto_join=i in auto)

    c = h.setup(1, observers=NODES - 1, kraft_version=1, configure=configure)
    h.wait_leader()
    h.wait_commit()
    if not c.run_until(c.now + LIVENESS_BOUND_MS, lambda: _joined(h, auto)):
        raise ScenarioFailure(f"auto-joining nodes {sorted(auto)} did not all become voters")
    _settle(h, {0, *auto, *rng.sample(joiners, rng.randint(0, len(joiners)))}, "growing")
    c.net.faults.drop_rate = rng.choice([0.0, 0.01, 0.05])
    c.on_leader = lambda leader: _eager_operator(h, leader)
    end = c.now + rng.randint(5000, 12000)
    while c.now < end:
        h.run(rng.randint(50, 1000))
        ids = list(c.nodes)
        up = [i for i in ids if c.is_up(i)]
        action = rng.random()
        if action < 0.38:
            _change(h)
            if rng.random() < 0.3:  # a second request before the first has committed
                c.at(c.now + rng.randint(0, 30), lambda: _change(h))
        elif action < 0.52 and up:
            c.crash(rng.choice(up))
        elif action < 0.66:
            c.start_down(ids)
        elif action < 0.78:
            c.split_at_random(rng, ids)
        elif action < 0.84:
            a, b = rng.sample(ids, 2)
            c.net.cut(a, b)
        else:
            c.net.heal()
    c.on_leader = None
    h.run(500)
    c.net.heal()
    c.net.faults.drop_rate = 0.0
    c.start_down()
    h.wait_commit()
    lead = c.leader()
    grown = len(_committed_voters(lead)) if lead is not None else 1
    # at most grown - 2 kept besides the leader, so a grown set always shrinks (contract 2)
    keep = _settle(h, set(rng.sample(list(c.nodes), rng.randint(0, max(0, min(2, grown - 2))))), "shrinking")
    for i in sorted(auto - keep):  # a restart forgets that it joined once: the leader must still refuse it
        c.crash(i)
        c.start(i)
    h.run(2 * c.config.fetch_timeout_ms)  # time for a removed auto-joining node to (wrongly) ask again
    lead = h.wait_leader()
    back = set(_committed_voters(lead)) - keep
    if back:
        raise ScenarioFailure(f"removed voters {sorted(back)} are voters again without an operator")
    h.wait_commit()


def reconfig(h: Harness) -> None:
    """KIP-853 under faults: a kraft.version 1 quorum of 2 to 5 voters loses followers one RemoveRaftVoter at a
    time while nodes crash and the network splits; removed voters keep running as observers. (A leader removing
    itself is covered by tests/core/test_update_voter.py and tests/interop/test_voters.py: here, a crash or
    check-quorum resignation before that change commits can leave the remaining voters behind the removed
    leader's log, with no voter able to win; the issue report lists it.) Invariant (10) is checked on every Voters
    record a leader appends; every other invariant is on, the durability checks (4, 7) counting the voter set in
    force (kraftd.sim.invariants (10))."""
    rng = h.rng
    voters = rng.randint(2, 5)
    c = h.setup(voters, kraft_version=1)
    # A removal at the first moment a leader exists, usually before it has committed in its epoch: it must be
    # refused then (the single-server membership bug, BugFlags.reconfig_before_commit).
    c.run_until(c.now + LIVENESS_BOUND_MS, lambda: c.leader() is not None)
    first = c.leader()
    if first is not None:
        membership.remove_voter(c, rng.choice([i for i in first.voters.ids if i != first.local.id]))
    h.wait_leader()
    h.wait_commit()
    end = c.now + rng.randint(5000, 15000)
    while c.now < end:
        h.run(rng.randint(50, 1200))
        lead = c.leader()
        ids = list(c.nodes)
        action = rng.random()
        others = [i for i in lead.voters.ids if i != lead.local.id] if lead is not None else []
        if action < 0.35 and others:
            membership.remove_voter(c, rng.choice(others))
        elif action < 0.5:
            up = [i for i in ids if c.is_up(i)]
            if up:
                c.crash(rng.choice(up))
        elif action < 0.7:
            c.start_down(ids)
        elif action < 0.8 and len(ids) > 1:
            c.split_at_random(rng, ids)
        else:
            c.net.heal()
    c.net.heal()
    c.start_down()
    h.wait_commit()
