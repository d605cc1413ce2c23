"""bench/scale.py's fair figures for controlled shutdown and broker failure (issue 24 §3): each phase timed also from
the protocol's own start, read from the swarm's heartbeat records, so that a kraftd/Kafka ratio carries no random term
from where in a heartbeat interval the swarm happened to act."""

from __future__ import annotations

import random
import statistics
from typing import Any

Heartbeat = tuple[
    float, float, int, int, int
]  # tools.swarm.swarm.Swarm.heartbeats: (sent, rtt s, error, broker, node)


def shutdown_figures(
    heartbeats: list[Heartbeat], broker_id: int, asked: float, done: float
) -> dict[str, Any]:
    """Controlled shutdown from the protocol's own start (issue 24 §3, fair figures): ``from_want_shut_down_s``,
    from sending the first heartbeat that asked WantShutDown (every heartbeat the broker sent from ``asked`` on) to
    ``done``; ``heartbeats``, how many it sent until then (each answer that did not say ShouldShutDown costs the
    broker's next heartbeat: Kafka's broker sends the second 50 ms after the first answer, the rest an interval
    apart)."""
    sent = [h[0] for h in heartbeats if h[3] == broker_id and asked <= h[0] <= done]
    if not sent:
        return {"from_want_shut_down_s": None, "heartbeats": 0}
    return {"from_want_shut_down_s": round(done - min(sent), 2), "heartbeats": len(sent)}


def failure_figures(
    heartbeats: list[Heartbeat], broker_id: int, killed: float, done: float, fenced: float, session_s: float
) -> dict[str, Any]:
    """Broker failure from the protocol's own start (issue 24 §3, fair figures): the session starts with the killed
    broker's last heartbeat answered without error (its send time: the controller touched the session between that
    and the answer); ``from_session_start_s`` until ``done``; ``fenced_after_expiry_s``, from the session's end
    (start + ``session_s``) to the swarm reading the fence record (the controller's check, its fencing write's
    commit and the record's fetch); ``kill_after_session_start_s``, the random term the kill adds (0 to one
    heartbeat interval), which the figure from the kill (``seconds``) subtracts."""
    last = max((h[0] for h in heartbeats if h[3] == broker_id and h[2] == 0 and h[0] <= killed), default=None)
    if last is None:
        return {"from_session_start_s": None}
    return {
        "from_session_start_s": round(done - last, 2),
        "fenced_after_expiry_s": round(fenced - last - session_s, 2),
        "kill_after_session_start_s": round(killed - last, 2),
    }


def fence_traces(swarm: Any, started: float, most: int = 40) -> list[dict[str, Any]]:
    """Each mistaken fence (at most ``most``) with what traces it (tools.swarm.swarm contract 7; issue 24 §3): when
    the swarm saw it (s from the point's start, and wall-clock for the controllers' "fencing broker" lines), the
    broker's controller-channel events before it (s from the fence), the swarm's late loop turns in the session
    timeout before it, and the broker's heartbeats recorded then (sent, round trip s, error, controller)."""
    out = []
    for f in swarm.mistaken_fences()[:most]:
        window = swarm.config.session_timeout_ms / 1000 + 3
        out.append(
            {
                "broker": f.broker_id,
                "at_s": round(f.at - started, 3),
                "wall": round(f.wall, 3),
                "source": f.source,
                "trace": f.trace,
                "swarm_loop_late": swarm.loop_lag.within(f.at - window, f.at, f.at),
                "heartbeats": [
                    (round(s - f.at, 3), round(rtt, 3), err, node)
                    for s, rtt, err, b, node in swarm.heartbeats
                    if b == f.broker_id and f.at - window <= s <= f.at
                ],
            }
        )
    return out


def swarm_pauses(swarm: Any, started: float, most: int = 12) -> dict[str, Any]:
    """The swarm's own pauses (tools.swarm.swarm contract 7, tools.swarm.replay contract 6), the longest ``most`` of
    each, timed from the point's start: late turns of its loop (s from start, late s) and slow replays (s from
    start, s, what)."""
    late = sorted(swarm.loop_lag.late, key=lambda x: -x[1])[:most]
    slow = sorted(swarm.replay.slow, key=lambda x: -x[1])[:most]
    return {
        "loop_late": [(round(due - started, 2), round(s, 3)) for due, s in sorted(late)],
        "replay_slow": [(round(at - started, 2), round(s, 3), what) for at, s, what in sorted(slow)],
    }


def kill_delay_s(kill: int) -> float:
    """How long the controller failover waits before its ``kill``-th kill -9 (the same sequence for both kinds): one
    second, so the previous phase's writes (the broker failure's fence and moves, a restarted controller's catch-up)
    are over, plus a part of the leaders' 500 ms idle-write cadence (metadata.max.idle.interval.ms) drawn from a
    generator seeded by ``kill``. The fetch timeout runs from a follower's last Fetch answer, so kill -> new leader is
    the fetch timeout minus that answer's age at the kill. Killed at once after the phase before, kraftd's survivors
    timed out 1.63-1.94 s after the kill in 49 kills (its last writes had just answered their Fetches), Kafka's
    1.39-1.50 s in two (docs/SWARM.md, session 20): a term from the bench's order, not from either controller."""
    return 1.0 + 0.5 * random.Random(kill).random()


def catch_up_figures(swarm: Any, started: float) -> dict[str, Any]:
    """What the observers read until now (tools.swarm.broker contract 7; docs/SWARM.md, session 20): the Fetch and
    FetchSnapshot answers read whole and their MB, summed over brokers; per snapshot the transfers started, when
    (s from the point's start: first, median, last) and from which fetch positions (least, median, most)."""
    read: dict[str, list[int]] = {"Fetch": [0, 0], "FetchSnapshot": [0, 0]}
    by_snapshot: dict[int, list[tuple[float, int]]] = {}
    for b in swarm.brokers.values():
        for key, name in ((1, "Fetch"), (59, "FetchSnapshot")):
            answers, size = b.raft_read.get(key, (0, 0))
            read[name][0], read[name][1] = read[name][0] + answers, read[name][1] + size
        for at, offset, position in b.transfers:
            by_snapshot.setdefault(offset, []).append((at - started, position))
    out: dict[str, Any] = {k: {"answers": n, "mb": round(size / 1e6, 1)} for k, (n, size) in read.items()}
    out["transfers"] = {}
    for offset, starts in sorted(by_snapshot.items()):
        ats, positions = sorted(a for a, _ in starts), sorted(p for _, p in starts)
        out["transfers"][offset] = {
            "started": len(starts),
            "at_s": [round(ats[0], 1), round(ats[len(ats) // 2], 1), round(ats[-1], 1)],
            "from": [positions[0], positions[len(positions) // 2], positions[-1]],
        }
    return out


def failover_summary(kills: list[dict[str, Any]]) -> dict[str, Any]:
    """One kill: its figures (today's output). Several (``--kills``): the median of each time, its max
    (``*_max``), the most elections and unanswered brokers of any kill, and every kill's figures."""
    if len(kills) == 1:
        return {k: v for k, v in kills[0].items() if k != "killed"}
    out: dict[str, Any] = {}
    for key in (
        "new_leader_s",
        "all_heartbeats_answered_s",
        "observers_learned_p50_s",
        "observers_learned_max_s",
    ):
        values = [kill[key] for kill in kills if key in kill]
        if not values:
            continue
        out[key], out[f"{key}_max"] = round(statistics.median(values), 2), max(values)
    for key in ("elections", "unanswered", "mistaken_fences"):
        out[key] = max(kill[key] for kill in kills)
    out["kills"] = kills
    return out
