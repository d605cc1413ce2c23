"""The checker itself (tools.lincheck): known linearizable and known non-linearizable histories."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tools.lincheck import READ, WRITE, CheckTooLargeError, Op, check


def w(c: int, v: str | None, call: float, ret: float | None, key: str = "k") -> Op:
    return Op(c, WRITE, key, v, call, ret)


def r(c: int, v: str | None, call: float, ret: float, key: str = "k") -> Op:
    return Op(c, READ, key, v, call, ret)


def test_sequential_history_is_linearizable() -> None:
    assert check([w(1, "a", 0, 1), r(2, "a", 2, 3), w(1, "b", 4, 5), r(2, "b", 6, 7)]).ok


def test_stale_read_after_an_acknowledged_write_is_caught() -> None:
    v = check([w(1, "a", 0, 1), w(1, "b", 2, 3), r(2, "a", 4, 5)])
    assert not v.ok and v.key == "k"
    assert "not linearizable" in v.explain()


def test_concurrent_read_may_see_either_value() -> None:
    assert check([w(1, "a", 0, 1), w(1, "b", 2, 6), r(2, "a", 3, 4)]).ok
    assert check([w(1, "a", 0, 1), w(1, "b", 2, 6), r(2, "b", 3, 4)]).ok


def test_reads_going_back_in_time_are_caught() -> None:
    # Both reads overlap the write, but once a read saw the new value a later read cannot see the old one.
    assert not check([w(1, "a", 0, 1), w(1, "b", 2, 10), r(2, "b", 3, 4), r(3, "a", 5, 6)]).ok


def test_initial_value_and_deletes() -> None:
    assert check([r(1, None, 0, 1), w(2, "a", 2, 3), w(2, None, 4, 5), r(1, None, 6, 7)]).ok
    assert not check([w(2, "a", 0, 1), r(1, None, 2, 3)]).ok


def test_unknown_outcome_write_may_apply_or_not() -> None:
    assert check([w(1, "a", 0, None), r(2, None, 1, 2), r(2, "a", 3, 4)]).ok
    assert check([w(1, "a", 0, None), r(2, None, 5, 6)]).ok
    # ...but not take effect before it was called, nor be un-done once seen.
    assert not check([r(2, "a", 0, 1), w(1, "a", 2, None)]).ok
    assert not check([w(1, "a", 0, None), r(2, "a", 1, 2), r(2, None, 3, 4)]).ok


def test_keys_are_checked_independently() -> None:
    ok = [w(1, "a", 0, 1, "x"), w(1, "b", 0, 1, "y"), r(2, "a", 2, 3, "x"), r(2, "b", 2, 3, "y")]
    assert check(ok).ok
    v = check([*ok, r(2, "b", 4, 5, "x")])
    assert not v.ok and v.key == "x"


def test_search_budget_is_enforced() -> None:
    ops = [w(i, str(i), 0, 100) for i in range(14)] + [r(99, "nope", 0, 100)]
    with pytest.raises(CheckTooLargeError):
        check(ops, max_states=1000)


def _simulate(rng: random.Random, n: int) -> list[Op]:
    """A real register driven by overlapping clients: every op takes effect at a point inside its interval."""
    events = []
    for c in range(4):
        t = 0.0
        for _ in range(n):
            call = t + rng.random()
            point = call + rng.random()
            ret = point + rng.random()
            kind = rng.choice((WRITE, READ))
            events.append((point, c, kind, call, ret, f"{c}-{rng.randrange(1000)}"))
            t = ret
    value: str | None = None
    out = []
    for _point, c, kind, call, ret, fresh in sorted(events):
        if kind == WRITE:
            value = fresh
            out.append(Op(c, WRITE, "k", fresh, call, ret))
        else:
            out.append(Op(c, READ, "k", value, call, ret))
    return out


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000))
def test_histories_of_a_real_register_are_linearizable(seed: int) -> None:
    assert check(_simulate(random.Random(seed), 12)).ok


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000))
def test_a_read_that_missed_an_earlier_write_is_caught(seed: int) -> None:
    rng = random.Random(seed)
    ops = _simulate(rng, 12)
    last = max(o.ret or 0 for o in ops)
    ops += [w(9, "new", last + 1, last + 2), r(9, "new", last + 3, last + 4)]
    stale = next((o.value for o in reversed(ops[:-2]) if o.kind == WRITE), None)
    ops.append(r(8, stale, last + 5, last + 6))  # a replica that never applied "new"
    assert not check(ops).ok
