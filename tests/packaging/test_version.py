"""The version is written once (pyproject.toml) and every place that states it reads it from there."""

from __future__ import annotations

import inspect
import subprocess
import tomllib
from pathlib import Path

from kraftd.config import config_from_properties
from kraftd.shell.net.wiring import quorum_config
from kwire.client import KafkaClient
from kwire.version import VERSION

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def test_the_code_reads_the_pyproject_version() -> None:
    assert VERSION == PYPROJECT
    assert (
        quorum_config(
            config_from_properties(
                {
                    "node.id": "1",
                    "process.roles": "controller",
                    "controller.listener.names": "CONTROLLER",
                    "listeners": "CONTROLLER://127.0.0.1:9093",
                    "controller.quorum.voters": "1@127.0.0.1:9093",
                    "metadata.log.dir": "/tmp/x",
                }
            )
        ).software_version
        == PYPROJECT
    )  # the core's ApiVersions probes
    default = inspect.signature(KafkaClient).parameters["client_software_version"].default
    assert default == PYPROJECT


def test_no_source_file_spells_the_version_itself() -> None:
    files = subprocess.run(
        ["git", "ls-files", "*.py", "*.pyx", "*.cfg", "*.toml"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    quoted = (f'"{PYPROJECT}"', f"'{PYPROJECT}'")
    spelled = [f for f in files if f != "pyproject.toml" and any(q in (ROOT / f).read_text() for q in quoted)]
    assert spelled == []
