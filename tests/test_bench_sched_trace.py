"""bench/sched_trace.py's analysis of ``perf script`` lines (contracts 2 and 2a): idle time beside a waiter."""

from __future__ import annotations

from bench.sched_trace import analyze

S0, S1, C = 100, 101, 200  # the leader, a follower, a client


def _switch(ts: float, cpu: int, prev: int, state: str, nxt: int) -> str:
    return (
        f"   x {prev} [{cpu:03d}] {ts:.6f}: sched:sched_switch: prev_comm=x prev_pid={prev} prev_prio=120 "
        f"prev_state={state} ==> next_comm=y next_pid={nxt} next_prio=120"
    )


def _wake(ts: float, cpu: int, waker: int, pid: int, target: int) -> list[str]:
    return [
        f"   x {waker} [{cpu:03d}] {ts:.6f}: sched:sched_waking: comm=y pid={pid} prio=120 target_cpu={target:03d}",
        f"   x {waker} [{cpu:03d}] {ts:.6f}: sched:sched_wakeup: comm=y pid={pid} prio=120 target_cpu={target:03d}",
    ]


def test_idle_while_a_server_waits_on_the_other_cpu_is_counted_and_how_it_ended() -> None:
    lines = [
        _switch(1.000, 0, 0, "R", S1),  # CPU 0 runs the follower
        _switch(1.000, 1, 0, "R", C),  # CPU 1 runs the client
        *_wake(1.001, 1, C, S0, 1),  # the client wakes the leader onto its own busy CPU
        _switch(1.002, 0, S1, "S", 0),  # the follower sleeps: CPU 0 idle while the leader waits on CPU 1
        *_wake(1.003, 1, C, S1, 0),  # ... until the follower is woken back onto CPU 0 (idle 1 ms)
        _switch(1.003, 0, 0, "R", S1),
        _switch(1.004, 1, C, "S", S0),  # the leader runs at last
        _switch(1.005, 0, S1, "S", 0),  # idle with nobody of ours waiting: idle, not beside a waiter
        _switch(1.006, 0, 0, "R", S1),
    ]
    out = analyze(lines, [S0, S1], [C])
    assert out["span_s"] == 0.006
    assert out["idle_cores_each_cpu"] == [round(0.002 / 0.006, 3), 0.0]
    assert out["idle_beside_a_waiter_cores"] == round(0.001 / 0.006, 3)
    assert out["idle_beside_a_waiter_us_p50_p90"] == [1000, 1000]
    assert out["idle_beside_a_waiter_ended_by_per_s"] == {"woken S": round(1 / 0.006)}
    assert out["idle_beside_a_waiter_after_the_sleep_of_per_s"] == {"S1": round(1 / 0.006)}
    wakes = out["wakeups_per_s"]
    assert wakes["S<-C"] == round(2 / 0.006)
    assert wakes["on the waker's CPU"] == round(1 / 0.006)
    assert wakes["elsewhere"] == round(1 / 0.006)
    assert "stacked (busy target, another CPU idle)" not in wakes  # CPU 0 was busy when the leader was woken


def test_an_idle_period_whose_end_is_not_traced_ends_at_the_next_wakeup_there() -> None:
    # contract 2a: CPU 1's switch out of idle is missing on this VM; its wake-up of the client still shows
    lines = [
        _switch(2.000, 0, 0, "R", S0),
        _switch(2.000, 1, C, "S", 0),
        *_wake(2.0005, 0, S0, S1, 0),  # the follower queues behind the leader on CPU 0, CPU 1 idle
        *_wake(2.002, 0, S0, C, 1),  # idle ends here (no switch traced), 1.5 ms beside the waiting follower
        _switch(2.003, 1, C, "S", 0),
        _switch(2.004, 0, S0, "S", S1),
    ]
    out = analyze(lines, [S0, S1], [C])
    assert out["idle_beside_a_waiter_us_p50_p90"] == [1500, 1500]
    assert out["idle_beside_a_waiter_ended_by_per_s"] == {"woken C": round(1 / 0.004)}
    assert out["wakeups_per_s"]["stacked (busy target, another CPU idle)"] == round(1 / 0.004)


def test_a_waiter_pulled_to_the_idle_cpu_ends_the_idle_period_as_a_pull() -> None:
    lines = [
        _switch(3.000, 0, 0, "R", S0),
        _switch(3.000, 1, 0, "R", C),
        _switch(3.001, 0, S0, "R", S1),  # the leader is preempted: it waits on CPU 0
        _switch(3.002, 1, C, "S", 0),  # CPU 1 idles beside it
        f"   x 0 [001] 3.004000: sched:sched_migrate_task: comm=y pid={S0} prio=120 orig_cpu=0 dest_cpu=1",
        _switch(3.004, 1, 0, "R", S0),
    ]
    out = analyze(lines, [S0, S1], [C])
    assert out["idle_beside_a_waiter_us_p50_p90"] == [2000, 2000]
    assert out["idle_beside_a_waiter_ended_by_per_s"] == {"pulled S": 250}
