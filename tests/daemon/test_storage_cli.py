"""kraft-storage: random-uuid, format (static, standalone, initial controllers), info."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

from click.testing import CliRunner

from kraftd.storage.bootstrap import parse_initial_controllers, read_bootstrap_checkpoint
from kraftd.storage.layout import bootstrap_checkpoint_path
from kraftd.storage.meta import read_meta
from kraftd.storage.uuids import random_uuid, uuid_from_str, uuid_to_str
from tests.daemon.conftest import write_properties
from tools.storage_cli import main

VERSION = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())["project"]["version"]

CLUSTER = "MkU3OEVBNTcwNTJENDM2Qg"


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


def test_random_uuid_prints_a_kafka_uuid() -> None:
    code, out = run("random-uuid")
    assert code == 0
    assert uuid_to_str(uuid_from_str(out.strip())) == out.strip()
    assert run("random-uuid")[1] != out


def test_format_with_static_voters_writes_only_meta(tmp_path: Path) -> None:
    cfg = write_properties(tmp_path / "s.properties", 1, 19093, tmp_path / "d", voters="1@127.0.0.1:19093")
    code, out = run("format", "--cluster-id", CLUSTER, "--config", str(cfg))
    assert code == 0, out
    assert "Formatting metadata directory" in out and "kraft.version 0" in out
    meta = read_meta(tmp_path / "d")
    assert meta is not None and (meta.cluster_id, meta.node_id, meta.version) == (CLUSTER, 1, 1)
    assert meta.directory_id is not None
    assert not bootstrap_checkpoint_path(tmp_path / "d").exists()
    code, out = run("format", "--cluster-id", CLUSTER, "--config", str(cfg))
    assert code == 1 and "already formatted" in out
    code, out = run("format", "--cluster-id", CLUSTER, "--config", str(cfg), "--ignore-formatted")
    assert code == 0
    code, out = run("format", "--cluster-id", CLUSTER, "--config", str(cfg), "--standalone")
    assert code == 1 and "controller.quorum.voters" in out


def test_format_standalone_writes_bootstrap_checkpoint(tmp_path: Path) -> None:
    cfg = write_properties(tmp_path / "s.properties", 4, 19094, tmp_path / "d")
    code, out = run("format", "-t", CLUSTER, "-c", str(cfg), "--standalone")
    assert code == 0, out
    meta = read_meta(tmp_path / "d")
    assert meta is not None and meta.directory_id is not None
    path = bootstrap_checkpoint_path(tmp_path / "d")
    assert path.name == "00000000000000000000-0000000000.checkpoint"
    version, voters = read_bootstrap_checkpoint(path)
    assert version == 1
    assert [(v.node_id, v.directory_id) for v in voters] == [(4, meta.directory_id)]
    assert [(e.name, e.host, e.port) for e in voters[0].endpoints] == [("CONTROLLER", "127.0.0.1", 19094)]


def test_format_initial_controllers_takes_our_directory_id(tmp_path: Path) -> None:
    ids = [random_uuid() for _ in range(3)]
    spec = ",".join(f"{i + 1}@127.0.0.1:{19100 + i}:{uuid_to_str(d)}" for i, d in enumerate(ids))
    cfg = write_properties(tmp_path / "s.properties", 2, 19101, tmp_path / "d")
    code, out = run("format", "-t", CLUSTER, "-c", str(cfg), "--initial-controllers", spec)
    assert code == 0, out
    meta = read_meta(tmp_path / "d")
    assert meta is not None and meta.directory_id == ids[1]
    _, voters = read_bootstrap_checkpoint(bootstrap_checkpoint_path(tmp_path / "d"))
    assert [v.node_id for v in voters] == [1, 2, 3]
    assert [v.endpoints[0].port for v in voters] == [19100, 19101, 19102]


def test_format_refusals(tmp_path: Path) -> None:
    cfg = write_properties(tmp_path / "s.properties", 1, 19093, tmp_path / "d")
    code, out = run("format", "-t", CLUSTER, "-c", str(cfg))
    assert code == 1 and "--no-initial-controllers" in out
    code, out = run("format", "-t", "not-a-uuid", "-c", str(cfg), "--standalone")
    assert code == 1 and "does not appear to be a valid UUID" in out
    code, out = run("format", "-t", CLUSTER, "-c", str(cfg), "--standalone", "--no-initial-controllers")
    assert code == 1 and "Only one of" in out
    code, out = run("format", "-t", CLUSTER, "-c", str(cfg), "--initial-controllers", "1@h:1")
    assert code == 1 and "expected id@host:port:directoryId" in out
    assert read_meta(tmp_path / "d") is None
    code, out = run("format", "-t", CLUSTER, "-c", str(cfg), "--no-initial-controllers")
    assert code == 0 and not bootstrap_checkpoint_path(tmp_path / "d").exists()


def test_parse_initial_controllers_errors() -> None:
    d = uuid_to_str(random_uuid())
    voters = parse_initial_controllers(f"0@[::1]:9093:{d}", "C")
    assert voters[0].endpoints[0].host == "::1"
    for bad in [f"x@h:1:{d}", f"1@h:0:{d}", f"1@h:1:{d},1@h:2:{random_uuid()}", "1@h:1:bad", ""]:
        try:
            parse_initial_controllers(bad, "C")
        except Exception as exc:  # noqa: BLE001 - asserting the type below
            assert type(exc).__name__ == "FormatInputError", bad
        else:
            raise AssertionError(f"accepted {bad!r}")


def test_info_reports_like_kafka(tmp_path: Path) -> None:
    cfg = write_properties(tmp_path / "s.properties", 1, 19093, tmp_path / "d", voters="1@127.0.0.1:19093")
    code, out = run("info", "-c", str(cfg))
    assert code == 1 and "Found problem:\n" in out and "does not exist" in out
    (tmp_path / "d").mkdir()
    code, out = run("info", "-c", str(cfg))
    assert code == 1 and f"Found log directory:\n  {tmp_path / 'd'}\n" in out and "is not formatted." in out
    run("format", "-t", CLUSTER, "-c", str(cfg))
    code, out = run("info", "-c", str(cfg))
    meta = read_meta(tmp_path / "d")
    assert meta is not None and meta.directory_id is not None
    assert code == 0
    assert (
        f"Found metadata: {{cluster.id={CLUSTER}, directory.id={uuid_to_str(meta.directory_id)}, "
        "node.id=1, version=1}\n" in out
    )


def test_entry_point_runs_as_a_process() -> None:
    exe = Path(sys.executable).with_name("kraft-storage")
    out = subprocess.run([str(exe), "random-uuid"], capture_output=True, text=True, timeout=30, check=True)
    assert len(out.stdout.strip()) == 22


def test_format_formats_every_directory_of_log_dirs(tmp_path: Path) -> None:
    """Kafka's StorageTool/Formatter formats metadata.log.dir and each log.dirs entry, every one with the same
    cluster id and node id and its own directory id."""
    dirs = [tmp_path / "a", tmp_path / "b"]
    cfg = write_properties(
        tmp_path / "s.properties",
        1,
        19093,
        tmp_path / "meta",
        voters="1@127.0.0.1:19093",
        extra={"log.dirs": ",".join(map(str, dirs))},
    )
    code, out = run("format", "--cluster-id", CLUSTER, "--config", str(cfg))
    assert code == 0, out
    metas = [read_meta(d) for d in [tmp_path / "meta", *dirs]]
    assert all(m is not None and (m.cluster_id, m.node_id) == (CLUSTER, 1) for m in metas)
    assert len({m.directory_id for m in metas if m is not None}) == 3
    assert all(f"Formatting data directory {d}" in out for d in dirs)
    code, out = run("format", "--cluster-id", CLUSTER, "--config", str(cfg))
    assert code == 1 and "already formatted" in out


def test_every_tool_prints_its_version_and_describe_help_works() -> None:
    """Every console script of pyproject.toml (README: every tool takes --version), one version: the package's."""
    bindir = Path(sys.executable).parent
    tools = sorted(
        tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())["project"]["scripts"]
    )
    assert {"kraft-conformance", "kraft-decode", "kraft-analytics"} <= set(tools)
    for tool in tools:
        out = subprocess.run([str(bindir / tool), "--version"], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0 and out.stdout.strip() == f"{tool}, version {VERSION}", out.stderr
    out = subprocess.run(
        [str(bindir / "kraft-metadata-quorum"), "describe", "--help"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 0 and "--status" in out.stdout and "--replication" in out.stdout, out.stderr
