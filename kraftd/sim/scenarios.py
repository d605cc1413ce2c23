"""The scenarios: Kafka's RaftEventSimulationTest set, KIP-996's pre-vote ping-pong (KAFKA-17641), the
zombie leader (KAFKA-15489), a random-fault chaos run, a Raft-thesis Figure 8 schedule, snapshots (KIP-630)
and, from kraftd.sim.membership_scenarios, voter changes (KIP-853). Each takes a
Harness, drives faults, and ends with a liveness check after healing. Safety is checked by the
invariants on every event; scenario-specific expectations raise ScenarioFailure.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from kraftd.core.types import Role
from kraftd.sim.harness import LIVENESS_BOUND_MS, Harness, ScenarioFailure
from kraftd.sim.membership_scenarios import membership_changes, reconfig
from kraftd.sim.network import NetworkFaults


def initial_election(h: Harness) -> None:
    voters = h.rng.randint(1, 5)
    h.setup(voters, observers=h.rng.randint(0, 3))
    h.wait_leader()
    h.run(h.rng.randint(500, 3000))
    h.wait_commit()
    c = h.c
    for i in c.nodes:  # observers and followers catch up and learn the leader
        if not c.run_until(c.now + 5000, partial(_knows_hwm, h, i)):
            raise ScenarioFailure(f"node {i} never learned the high watermark")


def _knows_hwm(h: Harness, node_id: int) -> bool:
    core = h.c.nodes[node_id].core
    return core is not None and core.high_watermark > 0


def _failover(h: Harness, graceful: bool) -> None:
    h.setup(h.rng.randint(3, 5), observers=h.rng.randint(0, 1))
    old = h.wait_leader().local.id
    h.run(h.rng.randint(200, 2000))
    if graceful:
        h.c.shutdown(old)
        h.run(h.rng.randint(50, 300))
    h.c.crash(old)
    h.wait_leader(exclude=old)
    h.wait_commit()
    h.c.start(old)
    h.run(h.rng.randint(500, 2000))
    h.wait_commit()


def failover_graceful(h: Harness) -> None:
    _failover(h, graceful=True)


def failover_kill(h: Harness) -> None:
    _failover(h, graceful=False)


def all_killed(h: Harness) -> None:
    voters = h.rng.randint(3, 5)
    h.setup(voters)
    h.wait_leader()
    h.run(h.rng.randint(200, 2000))
    for i in range(voters):
        h.c.crash(i)
    h.run(h.rng.randint(10, 500))
    ids = list(range(voters))
    h.rng.shuffle(ids)
    majority = voters // 2 + 1
    for i in ids[:majority]:
        h.c.start(i)
    h.wait_commit()
    for i in ids[majority:]:
        h.c.start(i)
    h.run(1000)
    h.wait_commit()


def leader_partitioned(h: Harness) -> None:
    voters = h.rng.randint(3, 5)
    h.setup(voters)
    old = h.wait_leader().local.id
    h.run(h.rng.randint(200, 1000))
    h.c.net.isolate(old, list(h.c.nodes))
    h.wait_leader(exclude=old)
    h.wait_commit()
    h.c.net.heal()
    h.run(2000)
    h.wait_commit()


def majority_progress(h: Harness) -> None:
    h.setup(5)
    lead = h.wait_leader().local.id
    others = [i for i in range(5) if i != lead]
    h.rng.shuffle(others)
    minority, majority = [lead, others[0]], others[1:]
    h.c.net.split(minority, majority)
    h.run(h.rng.randint(6000, 9000))
    hwm = {i: _hwm(h, i) for i in range(5)}
    if max(hwm[i] for i in majority) <= max(hwm[i] for i in minority):
        raise ScenarioFailure(f"majority side made no progress past the minority: {hwm}")
    h.c.net.heal()
    h.wait_commit()


def _hwm(h: Harness, node_id: int) -> int:
    core = h.c.nodes[node_id].core
    return core.high_watermark if core is not None else 0


def back_to_back(h: Harness) -> None:
    voters = h.rng.randint(3, 5)
    h.setup(voters)
    first = h.wait_leader().local.id
    h.run(h.rng.randint(100, 1000))
    h.c.crash(first)
    second = h.wait_leader(exclude=first).local.id
    h.run(h.rng.randint(0, 300))
    h.c.crash(second)
    h.c.start(first)
    h.wait_commit()
    h.c.start(second)
    h.run(1000)
    h.wait_commit()


def data_loss(h: Harness) -> None:
    """One node loses all its data (Kafka runs this without the monotonic-epoch and majority-HWM
    invariants). Appends pause until every node holds the committed data, as in Kafka's test."""
    voters = h.rng.randint(3, 5)
    h.setup(voters, check_monotonic_epoch=False, check_majority_hwm=False)
    h.wait_leader()
    h.run(h.rng.randint(200, 1500))
    h.work.enabled = False
    h.wait_commit()
    c = h.c
    c.run_until(c.now + 5000, lambda: _all_caught_up(h))
    victim = h.rng.randrange(voters)
    c.crash(victim, lose_state=True)
    c.start(victim)
    c.run_until(c.now + 5000, lambda: _all_caught_up(h))
    h.work.enabled = True
    h.wait_commit()


def _all_caught_up(h: Harness) -> bool:
    lead = h.c.leader()
    if lead is None:
        return False
    return all(
        n.core is not None and n.core.log.end_offset >= lead.log.end_offset for n in h.c.nodes.values()
    )


def prevote_pingpong(h: Harness) -> None:
    """KAFKA-17641: a follower that cannot hear the leader must not churn leadership."""
    h.setup(h.rng.randint(3, 5), faults=NetworkFaults(max_delay_ms=h.rng.choice([2, 10])))
    lead = h.wait_leader()
    h.wait_commit()
    leader_id, epoch = lead.local.id, lead.epoch
    victim = h.rng.choice([i for i in h.c.voter_ids if i != leader_id])
    if h.rng.random() < 0.5:
        h.c.net.cut(leader_id, victim)
    else:
        h.c.net.cut(victim, leader_id)
    h.run(h.rng.randint(6000, 10000))
    now = h.c.leader()
    if now is None or now.local.id != leader_id or now.epoch != epoch or h.c.max_epoch() != epoch:
        raise ScenarioFailure(f"leadership churned under a one-way partition: was n{leader_id} e{epoch}")
    h.c.net.heal()
    h.wait_commit()


def zombie_leader(h: Harness) -> None:
    """KAFKA-15489: a leader cut off from the majority resigns within check-quorum time."""
    h.setup(h.rng.randint(3, 5), faults=NetworkFaults(max_delay_ms=5))
    lead = h.wait_leader()
    zombie = lead.local.id
    h.run(h.rng.randint(0, 500))
    others = [i for i in h.c.nodes if i != zombie]
    if h.rng.random() < 0.5:
        h.c.net.isolate(zombie, others)
    else:
        for o in others:  # one-way: the zombie still talks, but hears nobody
            h.c.net.cut(o, zombie)
    h.run(h.c.config.check_quorum_timeout_ms + 1000)
    if h.role(zombie) is Role.LEADER:
        raise ScenarioFailure(f"zombie leader n{zombie} still leads after check-quorum timeout")
    h.c.net.heal()
    h.wait_commit()


def linearizable_reads(h: Harness) -> None:
    """Reads at every node (invariant 12) while the leader is cut off (a zombie until check-quorum), a
    follower crashes and the network splits; each served read must cover every write acknowledged before it."""
    c = h.setup(h.rng.randint(3, 5), observers=h.rng.randint(0, 1))
    h.enable_reads()
    zombie = h.wait_leader().local.id
    h.run(h.rng.randint(200, 1000))
    others = [i for i in c.nodes if i != zombie]
    if h.rng.random() < 0.5:
        c.net.isolate(zombie, others)
    else:
        for o in others:  # one-way: the zombie still talks, but hears nobody
            c.net.cut(o, zombie)
    h.wait_leader(exclude=zombie)
    h.wait_commit()
    h.run(h.rng.randint(0, c.config.check_quorum_timeout_ms))
    c.net.heal()
    h.wait_commit()
    victim = h.rng.choice([i for i in c.nodes if i != zombie])
    c.crash(victim)
    h.run(h.rng.randint(500, 2000))
    c.start(victim)
    h.wait_commit()
    h.run(1000)
    if c.reads_served == 0:
        raise ScenarioFailure("no read was served")


def chaos(h: Harness) -> None:
    voters = h.rng.randint(3, 5)
    c = h.setup(voters, observers=h.rng.randint(0, 1))
    rng = h.rng
    c.net.faults.drop_rate = rng.choice([0.0, 0.01, 0.05])  # silent loss, until the faults heal
    end = c.now + rng.randint(8000, 20000)
    while c.now < end:
        h.run(rng.randint(100, 1500))
        action = rng.random()
        ids = list(c.nodes)
        up = [i for i in ids if c.is_up(i)]
        down = [i for i in ids if not c.is_up(i)]
        if action < 0.2 and up:
            c.crash(rng.choice(up))
        elif action < 0.4 and down:
            c.start(rng.choice(down))
        elif action < 0.5 and up:
            victim = rng.choice(up)
            c.shutdown(victim)
            c.at(c.now + rng.randint(20, 400), partial(c.crash, victim))
        elif action < 0.65:
            rng.shuffle(ids)
            k = rng.randint(1, len(ids) - 1) if len(ids) > 1 else 1
            c.net.split(ids[:k], ids[k:])
        elif action < 0.75 and len(ids) > 1:
            a, b = rng.sample(ids, 2)
            c.net.cut(a, b)
        else:
            c.net.heal()
    h.run(500)  # let scheduled crashes (after graceful shutdowns) happen before the final restart
    c.net.heal()
    c.net.faults.drop_rate = 0.0
    c.start_down()
    h.wait_commit()


def figure8(h: Harness) -> None:
    """Raft thesis Figure 8 made concrete for KRaft (5 voters, fetches carry one batch each):
    1. leader A is cut off and appends X (old epoch) that nobody else has;
    2. E wins the next epoch and is cut off at once, so its LeaderChange batch stays on E;
    3. A, B, C reconnect: only A can win (its log is the longest there), and A re-replicates X;
    4. the moment A's HWM covers X, A is cut off: with the own-epoch rule B and C already hold A's
       LeaderChange; without it (BugFlags.commit_old_epoch) they hold X only;
    5. E, B, D reconnect: only E can win; if X was (wrongly) committed, B now truncates it."""
    c = h.setup(5, faults=NetworkFaults(max_delay_ms=2), fetch_max_bytes=1)
    everyone = list(c.nodes)
    a = h.wait_leader().local.id
    h.wait_commit()
    h.work.enabled = False
    h.run(300)
    c.net.isolate(a, everyone)
    x = h.append_now()
    h.run(50)
    e = h.wait_leader(exclude=a).local.id
    c.net.isolate(e, everyone)
    b, cc, d = [i for i in everyone if i not in (a, e)]
    c.net.isolate(d, everyone)
    for i in (a, b, cc):
        for j in (a, b, cc):
            c.net.blocked.discard((i, j))
    ok = _wait(h, lambda: _leads(h, a, 3), 20_000)
    if ok and x is not None:
        if _wait(h, lambda: _hwm(h, a) > x[1], 10_000):
            c.net.isolate(a, everyone)
            for i in (e, b, d):
                for j in (e, b, d):
                    c.net.blocked.discard((i, j))
            _wait(h, lambda: _leads(h, e, 4), 20_000)
            h.run(500)
    c.net.heal()
    h.work.enabled = True
    h.wait_commit()


def steady_leader(h: Harness, voters: int) -> None:
    """A fault-free quorum of ``voters`` keeps one leader in one epoch across several check-quorum timeouts
    while it commits (a lone voter is its own majority: Kafka's LeaderState exempts it from check-quorum);
    then a random voter crashes and restarts and the quorum commits again."""
    c = h.setup(
        voters, observers=h.rng.randint(0, 2), faults=NetworkFaults(max_delay_ms=h.rng.choice([2, 10, 30]))
    )
    lead = h.wait_leader()
    h.wait_commit()
    leader_id, epoch = lead.local.id, lead.epoch
    h.run(2 * c.config.check_quorum_timeout_ms + h.rng.randint(0, 1000))
    now = c.leader()
    if now is None or now.local.id != leader_id or now.epoch != epoch or c.max_epoch() != epoch:
        got = "none" if now is None else f"n{now.local.id} e{now.epoch}"
        raise ScenarioFailure(
            f"{voters}-voter quorum churned without faults: was n{leader_id} e{epoch}, now {got}"
        )
    h.wait_commit()
    victim = h.rng.choice(c.voter_ids)
    c.crash(victim)
    h.run(h.rng.randint(10, 1000))
    c.start(victim)
    h.wait_commit()


def _leads(h: Harness, node_id: int, min_epoch: int) -> bool:
    core = h.c.nodes[node_id].core
    return core is not None and core.role is Role.LEADER and core.epoch >= min_epoch


def _wait(h: Harness, pred: Callable[[], bool], ms: int) -> bool:
    return h.c.run_until(h.c.now + ms, pred)


def snapshots(h: Harness) -> None:
    """KIP-630 under faults: quorums of 1 to 5 voters and one observer whose state machines snapshot at random
    and delete the log each snapshot covers; crashes and partitions; a replica that starts late or falls
    behind the leader's log start must catch up with FetchSnapshot (in chunks when fetches are small)."""
    rng = h.rng
    voters = rng.randint(1, 5)
    c = h.setup(voters, observers=1, snapshots=True, fetch_max_bytes=rng.choice([None, 300]))
    late = voters  # the observer starts late, behind every snapshot
    c.crash(late)
    h.wait_leader()
    h.wait_commit()
    end = c.now + rng.randint(4000, 12000)
    while c.now < end:
        h.run(rng.randint(100, 1500))
        ids = list(c.nodes)
        up = [i for i in ids if c.is_up(i)]
        down = [i for i in ids if not c.is_up(i) and i != late]
        action = rng.random()
        if action < 0.2 and up:
            c.crash(rng.choice(up))
        elif action < 0.45 and down:
            c.start(rng.choice(down))
        elif action < 0.6 and len(ids) > 1:
            c.split_at_random(rng, ids)
        else:
            c.net.heal()
    c.net.heal()
    c.start_down()
    h.wait_commit()
    if not c.run_until(c.now + LIVENESS_BOUND_MS, lambda: _all_caught_up(h)):
        raise ScenarioFailure("a replica never caught up with the leader (snapshot catch-up stalled)")


SCENARIOS: dict[str, Callable[[Harness], None]] = {
    "initial_election": initial_election,
    "failover_graceful": failover_graceful,
    "failover_kill": failover_kill,
    "all_killed": all_killed,
    "leader_partitioned": leader_partitioned,
    "majority_progress": majority_progress,
    "back_to_back": back_to_back,
    "data_loss": data_loss,
    "prevote_pingpong": prevote_pingpong,
    "zombie_leader": zombie_leader,
    "chaos": chaos,
    "linearizable_reads": linearizable_reads,
    "figure8": figure8,
    "snapshots": snapshots,
    "reconfig": reconfig,
    "membership": membership_changes,
    # one scenario per quorum size, so a round-robin sweep runs 1, 2, 3, 4 and 5 voters alike
    **{f"steady_leader_{n}v": partial(steady_leader, voters=n) for n in range(1, 6)},
}
