"""The seeded fault schedule: one fault at a time, each injected, held, healed, then liveness is measured.

Contracts:
1. ``Schedule(seed)`` draws every choice (fault kind, victim, hold time, gap) from one ``random.Random(seed)``,
   so a seed names a run; every step is logged with its wall-clock timestamp.
2. At most one node is faulty at a time (a majority stays able to commit), and every fault is healed before
   the next is injected; after each heal a leader must be known within ``liveness_s`` (fetch timeout +
   election timeout x k), otherwise a liveness violation is recorded.
3. A fault on the leader measures failover: from injection to a new leader (higher epoch) being known.
4. A node process that exits unless the harness killed it is recorded as an unexpected death, except the
   disk-full victim (its fatal storage error is the designed behaviour, exit code 2), which is restarted.
5. Wall-clock jumps (tests.chaos.cluster contract 6) test kraftd.shell.raft.clock's contract: timers follow the
   monotonic clock, so stepped wall clocks neither move leadership nor freeze the followers' fetch timers.
"""

from __future__ import annotations

import os
import random
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

from kraftd.storage.layout import partition_dir
from tests.chaos.cluster import ELECTION_MS, FETCH_MS, ChaosCluster

KINDS = (
    "kill_leader",
    "kill_random",
    "pause_leader",
    "partition",
    "one_way",
    "slow_disk",
    "corrupt",
    "disk_full",
    "clock_jump",
)


@dataclass
class Tally:
    events: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    failovers_s: list[float] = field(default_factory=list)
    liveness_violations: list[str] = field(default_factory=list)
    unexpected_deaths: list[str] = field(default_factory=list)
    disk_full_exits: int = 0

    def log(self, text: str) -> None:
        line = f"{time.strftime('%H:%M:%S')}.{int(time.time() * 1000) % 1000:03d} {text}"
        self.events.append(line)
        print(line, flush=True)


class Schedule:
    def __init__(
        self, cluster: ChaosCluster, seed: int, *, hold: tuple[float, float], gap: tuple[float, float]
    ):
        self.c = cluster
        self.rng = random.Random(seed)
        self.hold, self.gap = hold, gap
        self.t = Tally()
        self.liveness_s = (FETCH_MS + ELECTION_MS * 10) / 1000
        self.kinds = [
            k
            for k in KINDS
            if (k != "disk_full" or cluster.disk_node is not None)
            and (k != "clock_jump" or cluster.faketime is not None)
        ]

    # ---- helpers
    def _hold(self) -> float:
        return self.rng.uniform(*self.hold)

    def _leader(self) -> tuple[int, int] | None:
        info = self.c.wait_leader(self.liveness_s)
        return (info.leader_id, info.leader_epoch) if info else None

    def _check_deaths(self, disk_victim: int | None = None) -> None:
        """Contract 4: restart unexpected deaths at once; the disk-full victim waits for space."""
        for i, code in self.c.exited().items():
            if i == disk_victim and code == 2:
                self.t.disk_full_exits += 1
                self.t.log(f"node {i} stopped on its full disk (exit 2: fatal storage error), as designed")
                continue
            why = self.c.last_words(i)
            self.t.unexpected_deaths.append(f"node {i} exited with {code}: {why}")
            self.t.log(f"UNEXPECTED: node {i} exited with {code} ({why}); restarting it")
            self.c.start(i)

    def _failover(self, old: tuple[int, int], what: str) -> None:
        start = time.monotonic()
        info = self.c.wait_leader(self.liveness_s + 10, newer_than=old[1], exclude=old[0])
        if info is None:
            self.t.liveness_violations.append(f"no new leader after {what}")
            self.t.log(f"VIOLATION: no new leader within {self.liveness_s + 10:.0f}s after {what}")
            return
        took = time.monotonic() - start
        self.t.failovers_s.append(took)
        self.t.log(
            f"failover after {what}: node {info.leader_id} leads epoch {info.leader_epoch} in {took:.2f}s"
        )

    def _liveness(self, what: str) -> None:
        start = time.monotonic()
        info = self.c.wait_leader(self.liveness_s)
        if info is None:
            self.t.liveness_violations.append(f"no leader within {self.liveness_s}s after healing {what}")
            self.t.log(f"VIOLATION: no leader within {self.liveness_s}s after healing {what}")
        else:
            self.t.log(
                f"healed {what}: leader {info.leader_id} epoch {info.leader_epoch} ({time.monotonic() - start:.2f}s)"
            )

    # ---- the loop
    def run(self, seconds: float) -> Tally:
        end = time.monotonic() + seconds
        self.t.log(f"chaos: {self.c.n} nodes, faults {', '.join(self.kinds)}")
        if self._leader() is None:
            self.t.liveness_violations.append("no initial leader")
        while time.monotonic() < end:
            kind = self.rng.choice(self.kinds)
            self.t.counts[kind] = self.t.counts.get(kind, 0) + 1
            getattr(self, kind)()
            self._check_deaths()
            time.sleep(self.rng.uniform(*self.gap))
        return self.t

    # ---- faults
    def kill_leader(self) -> None:
        old = self._leader()
        if old is None:
            return
        self.t.log(f"kill -9 leader {old[0]} (epoch {old[1]})")
        self.c.kill(old[0])
        self._failover(old, f"kill -9 of leader {old[0]}")
        time.sleep(self._hold())
        self.c.start(old[0])
        self.t.log(f"restarted node {old[0]}")
        self._liveness(f"restart of {old[0]}")

    def kill_random(self) -> None:
        victim = self.rng.choice(self.c.ids)
        self.t.log(f"kill -9 node {victim}")
        self.c.kill(victim)
        time.sleep(self._hold())
        self.c.start(victim)
        self.t.log(f"restarted node {victim}")
        self._liveness(f"kill -9 of {victim}")

    def pause_leader(self) -> None:
        old = self._leader()
        if old is None:
            return
        hold = self._hold()
        self.t.log(f"SIGSTOP leader {old[0]} for {hold:.1f}s")
        self.c.send_signal(old[0], signal.SIGSTOP)
        if hold > (FETCH_MS + ELECTION_MS) / 1000:
            self._failover(old, f"pause of leader {old[0]}")
        time.sleep(max(0.0, hold - 0))
        self.c.send_signal(old[0], signal.SIGCONT)
        self.t.log(f"SIGCONT node {old[0]} (a zombie leader until it learns the new epoch)")
        self._liveness(f"pause of {old[0]}")

    def partition(self) -> None:
        old = self._leader()
        victim = old[0] if old is not None and self.rng.random() < 0.5 else self.rng.choice(self.c.ids)
        hold = self._hold()
        self.t.log(f"partition: node {victim} isolated for {hold:.1f}s")
        self.c.isolate(victim)
        if old is not None and victim == old[0]:
            self._failover(old, f"isolation of leader {victim}")
        time.sleep(hold)
        self.c.heal()
        self._liveness(f"partition of {victim}")

    def one_way(self) -> None:
        old = self._leader()
        victim = old[0] if old is not None and self.rng.random() < 0.5 else self.rng.choice(self.c.ids)
        hold = self._hold()
        self.t.log(f"one-way cut: nothing from node {victim} reaches its peers for {hold:.1f}s")
        self.c.mute(victim)
        time.sleep(hold)
        self.c.heal()
        self._liveness(f"one-way cut of {victim}")

    def slow_disk(self) -> None:
        old = self._leader()
        kraftd = [i for i in self.c.ids if i not in self.c.kafka_nodes]
        victim = (
            old[0]
            if old is not None and old[0] in kraftd and self.rng.random() < 0.5
            else self.rng.choice(kraftd)
        )
        delay = self.rng.choice([50, 200, 800])
        hold = self._hold()
        self.t.log(f"slow disk: node {victim} fsync +{delay} ms for {hold:.1f}s")
        self.c.slow_file(victim).write_text(str(delay))
        time.sleep(hold)
        self.c.slow_file(victim).write_text("0")
        self._liveness(f"slow disk of {victim}")

    def corrupt(self) -> None:
        old = self._leader()
        followers = [i for i in self.c.ids if old is None or i != old[0]]
        victim = self.rng.choice(followers)
        self.c.kill(victim)
        segs = sorted(partition_dir(self.c.data_dir(victim)).glob("*.log"))
        how = "nothing to damage"
        if segs and segs[-1].stat().st_size > 200:
            seg = segs[-1]
            data = bytearray(seg.read_bytes())
            if self.rng.random() < 0.5:
                cut = self.rng.randint(1, min(500, len(data) - 100))
                seg.write_bytes(bytes(data[:-cut]))
                how = f"torn tail: {cut} bytes cut from {seg.name}"
            else:
                pos = len(data) - self.rng.randint(1, min(300, len(data) - 100))
                data[pos] ^= 1 << self.rng.randrange(8)
                seg.write_bytes(bytes(data))
                how = f"bit flip at byte {pos} of {seg.name}"
        self.t.log(f"kill -9 follower {victim}, {how}")
        time.sleep(self._hold() / 2)
        self.c.start(victim)
        self._liveness(f"corruption of {victim}")

    def disk_full(self) -> None:
        victim = self.c.disk_node
        assert victim is not None
        filler = self.c.data_dir(victim) / "filler"
        hold = self._hold() * 2
        self.t.log(f"disk full on node {victim} for {hold:.1f}s")
        _fill(filler)
        deadline = time.monotonic() + hold
        while time.monotonic() < deadline:
            self._check_deaths(disk_victim=victim)
            time.sleep(0.2)
        self._check_deaths(disk_victim=victim)
        filler.unlink(missing_ok=True)
        if self.c.alive(victim):
            self.t.log(f"space freed on node {victim} (it kept running)")
        else:
            self.c.start(victim)
            self.t.log(f"space freed; restarted node {victim}")
        self._liveness(f"disk full on {victim}")

    def clock_jump(self) -> None:
        """Contract 5: step the leader's wall clock forward and a minority of followers' back by hours; no
        election may follow, and a kill -9 of the leader must still fail over within the liveness bound."""
        old = self._leader()
        kraftd = [i for i in self.c.ids if i not in self.c.kafka_nodes]
        if old is None or old[0] not in kraftd:
            return
        followers = [i for i in kraftd if i != old[0]]
        back = self.rng.sample(followers, min(len(followers), (self.c.n - 1) // 2))
        ahead_s = self.rng.uniform(3600, 86400)
        self.c.jump_clock(old[0], ahead_s)
        for i in back:
            self.c.jump_clock(i, -self.rng.uniform(3600, 86400))
        self.t.log(f"wall clock of leader {old[0]} +{ahead_s / 3600:.1f}h, of followers {back} back by hours")
        time.sleep(1.0 + (FETCH_MS * 1.5 + ELECTION_MS) / 1000)  # the clock files are read within 1 s
        now = self._leader()
        if now != old:
            self.t.liveness_violations.append(f"leadership moved after wall-clock jumps: {old} -> {now}")
            self.t.log(f"VIOLATION: leadership moved after wall-clock jumps: {old} -> {now}")
        self.t.log(f"kill -9 leader {old[0]} (epoch {old[1]}) with stepped clocks")
        self.c.kill(old[0])
        self._failover(old, f"kill -9 of leader {old[0]} after wall-clock jumps")
        for i in [old[0], *back]:
            self.c.jump_clock(i, 0)
        self.c.start(old[0])
        self.t.log(f"restarted node {old[0]}; wall clocks restored")
        self._liveness(f"wall-clock jumps on {[old[0], *back]}")


def _fill(path: Path) -> None:
    chunk = b"\0" * (1 << 20)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        while True:
            try:
                os.write(fd, chunk)
            except OSError:
                break
        while True:  # the last partial megabyte too
            try:
                if os.write(fd, b"\0" * 4096) == 0:
                    break
            except OSError:
                break
    finally:
        os.close(fd)
