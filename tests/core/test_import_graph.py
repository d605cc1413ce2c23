"""kraftd/core's import graph (issue 10 layout): every import of one core module by another, including imports
under ``if TYPE_CHECKING:`` and inside functions, forms no cycle; the handler modules never import each other;
only the dispatcher (node) imports them all."""

from __future__ import annotations

import ast
from pathlib import Path

CORE = Path(__file__).resolve().parents[2] / "kraftd" / "core"
HANDLERS = {"election", "replication", "quorum_rpcs", "snapshotting", "voter_rpcs"}


def _core_imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            if node.level:  # relative: from . import x / from .x import y
                found.update(a.name for a in node.names) if not mod else found.add(mod.split(".")[0])
            elif mod == "kraftd.core":
                found.update(a.name for a in node.names)
            elif mod.startswith("kraftd.core."):
                found.add(mod.split(".")[2])
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[2] for a in node.names if a.name.startswith("kraftd.core."))
    return found


def graph() -> dict[str, set[str]]:
    mods = {p.stem for p in CORE.glob("*.py")}
    g = {p.stem: _core_imports(p) & mods for p in CORE.glob("*.py") if p.stem != "__init__"}
    for deps in g.values():
        deps.discard("__init__")
    return g


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    found: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> None:
        state[n] = 1
        stack.append(n)
        for d in sorted(g.get(n, ())):
            if state.get(d) == 1:
                found.append([*stack[stack.index(d) :], d])
            elif d not in state:
                visit(d)
        stack.pop()
        state[n] = 2

    for n in sorted(g):
        if n not in state:
            visit(n)
    return found


def test_no_cycles_within_core() -> None:
    assert cycles(graph()) == []


def test_handlers_never_import_each_other() -> None:
    g = graph()
    for h in HANDLERS:
        assert g[h] & HANDLERS == set(), f"{h} imports {g[h] & HANDLERS}"


def test_only_the_dispatcher_knows_every_handler() -> None:
    g = graph()
    assert HANDLERS <= g["node"]
    assert [n for n, deps in g.items() if HANDLERS <= deps] == ["node"]


def test_the_checker_sees_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == [["a", "b", "c", "a"]]
