"""The README's commands work as written on a set-up checkout: every Python command names the venv's
interpreter (a bare ``python`` lacks the dependencies), and every benchmark it names exists and parses its
flags; the quick-start server.properties it writes is valid."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
BENCH = re.findall(r"^\.venv/bin/python (bench/\w+\.py)\b", README, re.MULTILINE)


def test_no_command_uses_a_bare_python() -> None:
    bare = re.findall(r"(?:^|[`\s])(python3? [\w/.-]+)", README, re.MULTILINE)
    assert bare == [], bare


def test_the_readme_names_every_benchmark() -> None:
    # A benchmark is a bench/ script with a main; helper modules (bench/kafka_raft.py) are imported by them.
    scripts = [p for p in (ROOT / "bench").glob("*.py") if '__name__ == "__main__"' in p.read_text()]
    assert sorted(set(BENCH)) == sorted(f"bench/{p.name}" for p in scripts)


@pytest.mark.parametrize("script", BENCH)
def test_benchmark_commands_run(script: str) -> None:
    out = subprocess.run(
        [str(ROOT / ".venv/bin/python"), script, "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0 and "--json" in out.stdout, out.stderr


def test_quick_start_properties_parse(tmp_path: Path) -> None:
    block = README[README.index("printf '%s\\n'") :].split("> server.properties")[0]
    out = subprocess.run(
        ["bash", "-c", block + f"> {tmp_path}/server.properties"], capture_output=True, text=True, timeout=30
    )
    assert out.returncode == 0, out.stderr
    from kraftd.config import load_config

    cfg = load_config(tmp_path / "server.properties")
    assert cfg.node_id == 1 and cfg.metrics_port == 9100 and cfg.bootstrap_servers == (("127.0.0.1", 9093),)
