"""The layering contract of docs/CONTRACTS.md, checked by parsing every module's imports.

1. generated/ imports only the standard library, kwire.errors, kwire.codec and kwire.fastpath (and itself).
2. kwire/ never imports kraftd or tools; kwire.errors and kwire.codec import nothing of ours.
3. kraftd/core never imports the shell (kraftd.shell, kraftd.storage, kraftd.config), the simulator or tools.
4. Nothing below tools/ imports tools.
5. kraftd/controller (the metadata state machine) imports only generated, kwire and kraftd.core (and itself):
   never the shell, storage, config, simulator or tools, and no IO modules.
6. The Spark pipeline (kraft_spark/) sits on top: nothing in generated, kwire, kraftd, tools or codegen imports it.
7. The Spark pipeline never imports tools (or the test harness): what it shares with the tools is client logic,
   which lives in kwire (kwire.quorum_client).
8. The test harness kraftd.testing (Kafka processes, kraftd process clusters) is on top, like tools: it may import
   tools and the rest of kraftd, but nothing in generated, kwire, kraftd (outside kraftd/testing), tools, codegen
   or kraft_spark imports it.
9. bench/ never imports tests/: benchmarks use the importable harness (kraftd.testing).
10. No test module imports an underscore-prefixed name from another test module, nor anything from a test_*.py
    module: shared test helpers are fixtures (conftest.py) or public functions of tests.helpers.
11. No module under kraftd/shell/controller imports a generated response module: the controller operations
    (kraftd.controller.ops) build every response, the shell writes, waits and sends (issue 23's ControllerResult).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
OURS = ("generated", "kwire", "kraftd", "tools", "codegen", "kraft_spark", "bench", "tests")


def _imports(path: Path, root: Path = ROOT) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    package = ".".join(path.relative_to(root).with_suffix("").parts[:-1])
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
                mod = ".".join([*base, node.module] if node.module else base)
            else:
                mod = node.module or ""
            names.add(mod)
            # `from kwire import errors` names the submodule kwire.errors.
            names.update(f"{mod}.{alias.name}" for alias in node.names)
    return names


def _modules(package: str, root: Path = ROOT, skip: str | None = None) -> list[Path]:
    paths = sorted((root / package).rglob("*.py"))
    return [p for p in paths if skip is None or not p.is_relative_to(root / skip)]


def _ours(name: str) -> bool:
    return name.split(".")[0] in OURS


def _violations(
    package: str,
    allowed: tuple[str, ...],
    forbidden: tuple[str, ...] = (),
    root: Path = ROOT,
    skip: str | None = None,
) -> list[str]:
    bad = []
    for path in _modules(package, root, skip):
        for name in _imports(path, root):
            if forbidden and any(name == f or name.startswith(f + ".") for f in forbidden):
                bad.append(f"{path.relative_to(root)} imports {name}")
            elif allowed and _ours(name) and not any(name == a or name.startswith(a + ".") for a in allowed):
                # `from kwire import errors` yields both "kwire" and "kwire.errors"; the bare package is fine.
                if name in {a.split(".")[0] for a in allowed}:
                    continue
                bad.append(f"{path.relative_to(root)} imports {name}")
    return bad


def test_generated_depends_only_on_runtime() -> None:
    if not _modules("generated"):
        pytest.skip("generated/ is empty")
    assert (
        _violations("generated", allowed=("generated", "kwire.errors", "kwire.codec", "kwire.fastpath")) == []
    )


def test_kwire_never_imports_kraftd_or_tools() -> None:
    assert _violations("kwire", allowed=(), forbidden=("kraftd", "tools", "codegen")) == []


def test_kwire_runtime_modules_import_nothing_of_ours() -> None:
    for name in ("errors", "codec"):
        path = ROOT / "kwire" / f"{name}.py"
        if path.exists():
            ours = sorted(
                n for n in _imports(path) if _ours(n) and n != "kwire" and not n.startswith("kwire.errors")
            )
            assert ours == [], f"kwire/{name}.py imports {ours}"


def test_fastpath_imports_only_codec_errors_and_engine() -> None:
    ours = sorted(n for n in _imports(ROOT / "kwire" / "fastpath.py") if _ours(n) and n != "kwire")
    assert {n for n in ours if not n.startswith("kwire.errors.")} <= {
        "kwire.codec",
        "kwire.errors",
        "kwire._fastcodec",
        "kwire.compiled",
        "kwire.record_codec",  # set_compiled switches its compiled twins too (record_codec contract 4)
    }, ours


def test_core_never_imports_shell_sim_or_tools() -> None:
    forbidden = ("kraftd.shell", "kraftd.storage", "kraftd.config", "kraftd.sim", "tools", "codegen")
    assert _violations("kraftd/core", allowed=(), forbidden=forbidden) == []


def test_core_imports_no_io_modules() -> None:
    io_modules = ("asyncio", "socket", "os", "time", "threading", "subprocess", "selectors", "pathlib", "io")
    assert _violations("kraftd/core", allowed=(), forbidden=io_modules) == []


def test_controller_depends_only_on_core_kwire_generated() -> None:
    allowed = ("generated", "kwire", "kraftd.core", "kraftd.controller")
    assert _violations("kraftd/controller", allowed=allowed) == []


def test_controller_imports_no_io_modules() -> None:
    io_modules = ("asyncio", "socket", "os", "time", "threading", "subprocess", "selectors", "pathlib", "io")
    assert _violations("kraftd/controller", allowed=(), forbidden=io_modules) == []


def test_nothing_below_the_pipeline_imports_it() -> None:
    for package in ("generated", "kwire", "kraftd", "tools", "codegen"):
        assert _violations(package, allowed=(), forbidden=("kraft_spark",)) == []


def test_pipeline_never_imports_tools() -> None:
    """Rule 7."""
    assert _violations("kraft_spark", allowed=(), forbidden=("tools", "kraftd.testing")) == []


def test_nothing_below_the_harness_imports_it() -> None:
    """Rule 8."""
    for package in ("generated", "kwire", "kraftd", "tools", "codegen", "kraft_spark"):
        assert _violations(package, allowed=(), forbidden=("kraftd.testing",), skip="kraftd/testing") == []


def test_bench_never_imports_tests() -> None:
    """Rule 9."""
    assert _violations("bench", allowed=(), forbidden=("tests",)) == []


def _private_test_imports(root: Path = ROOT) -> list[str]:
    """Rule 10: ``from tests.x import _name`` (or ``from .x import _name``), or any import from a ``test_*``
    module, in any module under tests/."""
    bad = []
    for path in _modules("tests", root):
        package = ".".join(path.relative_to(root).with_suffix("").parts[:-1])
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
                mod = ".".join([*base, node.module] if node.module else base)
            else:
                mod = node.module or ""
            if mod.split(".")[0] != "tests":
                continue
            bad += [
                f"{path.relative_to(root)} imports {mod}.{a.name}"
                for a in node.names
                if a.name.startswith(("_", "test_")) or mod.rsplit(".", 1)[-1].startswith("test_")
            ]
    return bad


def test_no_test_module_imports_private_helpers_of_another() -> None:
    """Rule 10."""
    assert _private_test_imports() == []


def test_checker_sees_planted_violations(tmp_path: Path) -> None:
    # The checker itself must be able to fail: a core module importing asyncio, and a kwire module importing
    # kraftd through a relative-looking absolute import, are both reported.
    (tmp_path / "kraftd" / "core").mkdir(parents=True)
    (tmp_path / "kraftd" / "core" / "bad.py").write_text("import asyncio\nfrom kraftd.shell import node\n")
    (tmp_path / "kwire").mkdir()
    (tmp_path / "kwire" / "bad.py").write_text("from kraftd.core import roles\n")
    core_bad = _violations("kraftd/core", allowed=(), forbidden=("asyncio", "kraftd.shell"), root=tmp_path)
    assert sorted(core_bad) == [
        "kraftd/core/bad.py imports asyncio",
        "kraftd/core/bad.py imports kraftd.shell",
        "kraftd/core/bad.py imports kraftd.shell.node",
    ]
    assert _violations("kwire", allowed=(), forbidden=("kraftd",), root=tmp_path) != []
    (tmp_path / "kraft_spark").mkdir()
    (tmp_path / "kraft_spark" / "bad.py").write_text("from tools.quorum_cli import fetch_quorum\n")
    assert sorted(_violations("kraft_spark", allowed=(), forbidden=("tools",), root=tmp_path)) == [
        "kraft_spark/bad.py imports tools.quorum_cli",
        "kraft_spark/bad.py imports tools.quorum_cli.fetch_quorum",
    ]
    (tmp_path / "kraftd" / "testing").mkdir()
    (tmp_path / "kraftd" / "testing" / "ok.py").write_text("from kraftd.testing import kafka\n")
    assert (
        _violations("kraftd", allowed=(), forbidden=("kraftd.testing",), root=tmp_path, skip="kraftd/testing")
        == []
    )
    (tmp_path / "tests" / "a").mkdir(parents=True)
    (tmp_path / "tests" / "a" / "test_x.py").write_text(
        "from tests.a.test_y import _helper, public\nfrom .z import _h, ok\nfrom tests.a import test_y\n"
    )
    assert sorted(_private_test_imports(tmp_path)) == [
        "tests/a/test_x.py imports tests.a.test_y",
        "tests/a/test_x.py imports tests.a.test_y._helper",
        "tests/a/test_x.py imports tests.a.test_y.public",
        "tests/a/test_x.py imports tests.a.z._h",
    ]


def _module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _file_imports(path: Path, root: Path, files: dict[str, Path]) -> set[str]:
    """The files (module names in ``files``) ``path`` imports: ``from pkg import mod`` names the file mod, not
    the package's ``__init__`` (which every import of a submodule runs first anyway)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = ".".join(path.relative_to(root).with_suffix("").parts[:-1])
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name in files)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
                mod = ".".join([*base, node.module] if node.module else base)
            else:
                mod = node.module or ""
            subs = [f"{mod}.{a.name}" for a in node.names if f"{mod}.{a.name}" in files]
            found.update(subs)
            if len(subs) < len(node.names) and mod in files:
                found.add(mod)
    return found


def _import_cycles(package: str, root: Path = ROOT) -> list[list[str]]:
    """Every import circle between the files of ``package`` (TYPE_CHECKING and function-level imports included):
    the strongly connected components of the file graph with more than one file (Tarjan)."""
    paths = {_module_name(p, root): p for p in _modules(package, root)}
    graph = {m: sorted(n for n in _file_imports(p, root, paths) if n != m) for m, p in paths.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:  # recursion depth is bounded by the number of files
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                scc.append(w)
                if w == v:
                    break
            if len(scc) > 1:
                cycles.append(sorted(scc))

    for m in sorted(graph):
        if m not in index:
            visit(m)
    return cycles


def test_shell_controller_parts_build_no_responses() -> None:
    responses = tuple(f"generated.{p.stem}" for p in sorted((ROOT / "generated").glob("*_response.py")))
    assert responses
    assert _violations("kraftd/shell/controller", allowed=(), forbidden=responses) == []


def test_no_import_circle_under_kraftd() -> None:
    # issue 23: no file under kraftd/ reaches itself through imports, TYPE_CHECKING ones included.
    assert _import_cycles("kraftd") == []


def test_cycle_checker_sees_a_planted_circle(tmp_path: Path) -> None:
    shell = tmp_path / "kraftd" / "shell"
    shell.mkdir(parents=True)
    (shell / "a.py").write_text("from kraftd.shell import b\n")
    (shell / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from kraftd.shell.c import C\n"
    )
    (shell / "c.py").write_text("def f() -> None:\n    from kraftd.shell.a import x\n")
    (shell / "d.py").write_text("from kraftd.shell import a\n")
    assert _import_cycles("kraftd", root=tmp_path) == [["kraftd.shell.a", "kraftd.shell.b", "kraftd.shell.c"]]
