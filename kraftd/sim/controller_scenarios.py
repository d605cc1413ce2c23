"""Controller scenarios: the metadata state machine on every simulated node, brokers as clients, under
partitions, crashes and message loss (issue 9). Safety: the Raft invariants (1)-(11) and the controller
invariants (21)-(28) after every event (kraftd.sim.controller_invariants). Liveness, once healed: a write commits
and every running broker ends registered and unfenced within the bound.

Replay a seed with ``python -m kraftd.sim --scenario controller_chaos --seed N``.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from kraftd.sim.controller_brokers import BrokerFleet
from kraftd.sim.controller_cluster import ControllerCluster
from kraftd.sim.harness import LIVENESS_BOUND_MS, Harness, ScenarioFailure
from kraftd.sim.network import NetworkFaults


def _setup(h: Harness, snapshots: bool) -> tuple[ControllerCluster, BrokerFleet]:
    rng = h.rng
    faults = NetworkFaults(
        max_delay_ms=rng.choice([2, 5, 10, 30]),
        drop_rate=rng.choice([0.0, 0.0, 0.01, 0.03]),
        disconnect_rate=rng.choice([0.0, 0.01]),
        duplicate_rate=rng.choice([0.0, 0.01, 0.05]),
    )
    c = h.setup(rng.randint(1, 5), faults=faults, snapshots=snapshots, cluster_class=ControllerCluster)
    assert isinstance(c, ControllerCluster)
    h.work.enabled = False  # the brokers are the workload
    fleet = BrokerFleet(c, rng, rng.randint(2, 5))
    return c, fleet


def _faults(h: Harness, c: ControllerCluster, fleet: BrokerFleet, duration_ms: int) -> None:
    rng = h.rng
    end = c.now + duration_ms
    brokers = sorted(fleet.brokers)
    while c.now < end:
        h.run(rng.randint(100, 1500))
        action = rng.random()
        nodes = list(c.nodes)
        down = [i for i in nodes if not c.is_up(i)]
        if action < 0.12:
            up = [i for i in nodes if c.is_up(i)]
            if up:
                c.crash(rng.choice(up))
        elif action < 0.24 and down:
            c.start(rng.choice(down))
        elif action < 0.34:
            fleet.kill(rng.choice(brokers))
        elif action < 0.46:
            fleet.restart(rng.choice(brokers))
        elif action < 0.54:
            fleet.controlled_shutdown(rng.choice(brokers))
        elif action < 0.62 and len(nodes) > 1:
            everyone = nodes + brokers
            rng.shuffle(everyone)
            k = rng.randint(1, len(everyone) - 1)
            c.net.split(everyone[:k], everyone[k:])
        elif action < 0.70:
            c.net.isolate(rng.choice(brokers), nodes)  # a broker loses its controllers: fenced, then back
        else:
            c.net.heal()


def _heal_and_settle(h: Harness, c: ControllerCluster, fleet: BrokerFleet) -> None:
    c.net.heal()
    c.start_down()
    for b in fleet.brokers:
        fleet.restart(b)
    h.wait_commit()
    if not c.run_until(c.now + LIVENESS_BOUND_MS, fleet.settled):
        raise ScenarioFailure("a running broker never ended registered and unfenced after healing")


def controller_chaos(h: Harness, snapshots: bool = False) -> None:
    c, fleet = _setup(h, snapshots or h.rng.random() < 0.3)
    h.wait_leader()
    if not c.run_until(c.now + LIVENESS_BOUND_MS, fleet.settled):
        raise ScenarioFailure("the brokers never registered and unfenced")
    _faults(h, c, fleet, h.rng.randint(8000, 20000))
    _heal_and_settle(h, c, fleet)


def controller_failover(h: Harness) -> None:
    """Steady brokers and topic traffic while the active controller is killed again and again."""
    c, fleet = _setup(h, h.rng.random() < 0.5)
    h.wait_leader()
    for _ in range(h.rng.randint(2, 4)):
        if not c.run_until(c.now + LIVENESS_BOUND_MS, fleet.settled):
            raise ScenarioFailure("the brokers never settled under a stable controller")
        h.run(h.rng.randint(500, 3000))
        active = c.active_controller()
        if active is not None:
            c.crash(active)
            h.run(h.rng.randint(100, 3000))
            c.start(active)
    _heal_and_settle(h, c, fleet)


STABLE_MS = 10_000


def _stable_leader(c: ControllerCluster, deadline: int) -> tuple[bool, list[tuple[int, int]]]:
    """True once one node has been the active controller, in one epoch, for ``STABLE_MS``; and the (node, epoch)
    of every active controller seen."""
    seen: list[tuple[int, int]] = []
    since = c.now
    while c.now < deadline:
        nid = c.active_controller()
        core = c.nodes[nid].core if nid is not None else None
        cur = (nid, core.epoch) if nid is not None and core is not None else None
        if cur is None or not seen or seen[-1] != cur:
            since = c.now
            if cur is not None:
                seen.append(cur)
        elif c.now - since >= STABLE_MS:
            return True, seen
        c.run_until(c.now + 100)
    return False, seen


def controller_large_image(h: Harness) -> None:
    """Issue 22: the active controller of a large image (kraftd.sim.controller_cluster 6: ``image_weight``
    partitions) is killed again and again; each time one new active controller must take over and stay, its
    activation never stalling its loop into a lost check-quorum."""
    rng = h.rng
    faults = NetworkFaults(max_delay_ms=rng.choice([2, 5, 10]))
    c = h.setup(
        rng.choice([3, 5]), faults=faults, snapshots=rng.random() < 0.5, cluster_class=ControllerCluster
    )
    assert isinstance(c, ControllerCluster)
    h.work.enabled = False
    fleet = BrokerFleet(c, rng, rng.randint(2, 4))
    c.image_weight = rng.choice([100_000, 1_000_000])
    h.wait_leader()
    for _ in range(rng.randint(2, 3)):
        if not c.run_until(c.now + LIVENESS_BOUND_MS, fleet.settled):
            raise ScenarioFailure("the brokers never settled under a stable controller")
        active = c.active_controller()
        if active is None:
            raise ScenarioFailure("the quorum lost its leader: no active controller before the kill")
        c.crash(active)
        ok, seen = _stable_leader(c, c.now + LIVENESS_BOUND_MS)
        if not ok:
            raise ScenarioFailure(
                f"the quorum lost its leader: no active controller stayed {STABLE_MS} ms within "
                f"{LIVENESS_BOUND_MS} ms of killing node {active} (active controllers, epochs: {seen})"
            )
        c.start(active)
    _heal_and_settle(h, c, fleet)


MANY_BROKERS, MANY_PARTITIONS, PER_TOPIC = 100, 10_000, 100


def controller_many_brokers(h: Harness) -> None:
    """Issue 24 §4: 100 brokers and 10k partitions (100 topics x 100, RF 3, created through the brokers'
    CreateTopics) under controller crashes, network partitions, broker kills, restarts and controlled shutdowns;
    the controller invariants after every event, as in ``controller_chaos``. Too slow for the seed sweep (every
    committed batch is checked against a 10k-partition reference image): run one seed with
    ``python -m kraftd.sim --scenario controller_many_brokers --seed N``."""
    rng = h.rng
    faults = NetworkFaults(max_delay_ms=rng.choice([2, 5, 10]), drop_rate=rng.choice([0.0, 0.01]))
    c = h.setup(3, faults=faults, snapshots=rng.random() < 0.5, cluster_class=ControllerCluster)
    assert isinstance(c, ControllerCluster)
    h.work.enabled = False
    fleet = BrokerFleet(c, rng, MANY_BROKERS)
    fleet.admin = False  # the topics below are the whole topic workload
    h.wait_leader()
    if not c.run_until(c.now + LIVENESS_BOUND_MS, fleet.settled):
        raise ScenarioFailure("the brokers never registered and unfenced")
    names = [f"big{i:03d}" for i in range(MANY_PARTITIONS // PER_TOPIC)]
    deadline = c.now + 6 * LIVENESS_BOUND_MS
    while c.now < deadline and (missing := fleet.missing_topics(names)):
        fleet.create_topics(missing[:10], PER_TOPIC)
        h.run(500)
    if fleet.missing_topics(names):
        raise ScenarioFailure("the 10k partitions were never all created")
    _faults(h, c, fleet, rng.randint(5000, 10000))
    _heal_and_settle(h, c, fleet)


SCALE_SCENARIOS: dict[str, Callable[[Harness], None]] = {"controller_many_brokers": controller_many_brokers}

CONTROLLER_SCENARIOS: dict[str, Callable[[Harness], None]] = {
    "controller_large_image": controller_large_image,
    "controller_chaos": controller_chaos,
    "controller_snapshots": partial(controller_chaos, snapshots=True),
    "controller_failover": controller_failover,
}
