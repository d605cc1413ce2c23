"""A linearizability checker for key-value histories (Wing & Gong's search with Lowe's memoization, as Porcupine).

The model is a map of registers, e.g. config entries keyed by (resource, config name): ``write(key, value)``
(value None deletes) and ``read(key) -> value``. Linearizability is local (Herlihy & Wing 1990, Theorem 1), so
each key's sub-history is checked on its own.

Contracts:
1. An operation is (client, kind, key, value, call, ret) with ``call <= ret`` on one clock the recorder owns
   (monotonic time of the process that issued every request). ``ret`` is None when the outcome is unknown (a
   write that timed out or failed after it may have been appended): it may take effect at any point after its
   call, or never. Reads that failed carry no information and are left out by the recorder.
2. ``check`` returns a ``Verdict``; ``ok`` is True iff every key has a sequential order of its operations that
   respects real time (an operation that returned before another was called precedes it) and the register
   semantics (each read sees the latest write before it, or the initial value None). On failure ``key`` and
   ``ops`` name a sub-history with no such order.
3. The search is exact; memoizing (set of linearized operations, register value) keeps it polynomial for the
   histories our tests record (hundreds of operations per key, bounded concurrency). ``max_states`` bounds it:
   exceeding it raises ``CheckTooLargeError`` instead of answering wrongly.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

WRITE, READ = "write", "read"
INFINITY = float("inf")


@dataclass(frozen=True, slots=True)
class Op:
    client: int
    kind: str  # WRITE or READ
    key: str
    value: str | None
    call: float
    ret: float | None  # None: unknown outcome (contract 1)


@dataclass(frozen=True, slots=True)
class Verdict:
    ok: bool
    key: str | None = None
    ops: tuple[Op, ...] = ()
    states: int = 0

    def explain(self) -> str:
        if self.ok:
            return f"linearizable ({self.states} search states)"
        lines = [f"not linearizable: key {self.key!r} ({len(self.ops)} operations)"]
        for op in sorted(self.ops, key=lambda o: o.call):
            ret = "?" if op.ret is None else f"{op.ret:.6f}"
            lines.append(f"  client {op.client} {op.kind}({op.value!r}) [{op.call:.6f}, {ret}]")
        return "\n".join(lines)


class CheckTooLargeError(RuntimeError):
    """The search exceeded ``max_states`` (contract 3)."""


def check(history: Iterable[Op], *, initial: str | None = None, max_states: int = 5_000_000) -> Verdict:
    """Contract 2."""
    by_key: dict[str, list[Op]] = {}
    for op in history:
        if op.kind not in (WRITE, READ):
            raise ValueError(f"unknown operation kind {op.kind!r}")
        if op.ret is not None and op.ret < op.call:
            raise ValueError(f"operation returns before its call: {op}")
        if op.kind == READ and op.ret is None:
            continue  # a read without an answer says nothing (contract 1)
        by_key.setdefault(op.key, []).append(op)
    total = 0
    for key in sorted(by_key):
        ok, states = _check_key(by_key[key], initial, max_states - total)
        total += states
        if not ok:
            return Verdict(False, key, tuple(by_key[key]), total)
    return Verdict(True, states=total)


def _check_key(ops: Sequence[Op], initial: str | None, budget: int) -> tuple[bool, int]:
    # An unknown-outcome write whose value no read returned may as well never have happened: taking effect can
    # only make later reads return its value (contract 1), so dropping it keeps the answer and the search small.
    seen_values = {o.value for o in ops if o.kind == READ}
    ops = sorted(
        (o for o in ops if o.ret is not None or o.kind == READ or o.value in seen_values),
        key=lambda o: o.call,
    )
    n = len(ops)
    calls = [o.call for o in ops]
    rets = [INFINITY if o.ret is None else o.ret for o in ops]
    required = 0
    for i, o in enumerate(ops):
        if o.ret is not None:
            required |= 1 << i
    seen: set[tuple[int, str | None]] = set()
    stack: list[tuple[int, str | None]] = [(0, initial)]
    while stack:
        done, state = stack.pop()
        if done & required == required:
            return True, len(seen)
        if (done, state) in seen:
            continue
        seen.add((done, state))
        if len(seen) > budget:
            raise CheckTooLargeError(f"more than {budget} search states")
        # The operations that may go next: pending ones called before every pending one returned. Scanning in
        # call order, an operation called after the running minimum return cannot lower it (ret >= call).
        i = (~done & (done + 1)).bit_length() - 1
        horizon = INFINITY
        candidates = []
        while i < n:
            if not (done >> i) & 1:
                if calls[i] > horizon:
                    break
                candidates.append(i)
                horizon = min(horizon, rets[i])
            i += 1
        for i in candidates:
            if calls[i] > horizon:
                continue
            op = ops[i]
            if op.kind == WRITE:
                stack.append((done | (1 << i), op.value))
            elif op.value == state:
                stack.append((done | (1 << i), state))
    return False, len(seen)


def dump(history: Iterable[Op], path: Path) -> None:
    """One JSON object per line (what ``load`` reads), so a failing run's history can be kept and re-checked."""
    with path.open("w") as f:
        for op in history:
            f.write(json.dumps(asdict(op)) + "\n")


def load(path: Path) -> list[Op]:
    return [Op(**json.loads(line)) for line in path.read_text().splitlines() if line.strip()]
