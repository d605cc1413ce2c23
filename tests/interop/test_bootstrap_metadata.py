"""kraft-storage format --release-version/--feature against Kafka 4.3.1's StorageTool.

Invariants:
1. For the same release version and feature flags, our bootstrap.checkpoint equals Kafka's byte for byte once the
   clock is taken out (every batch's base and max timestamp set to 0 and the CRC recomputed, in both files).
2. For a bad release version or feature flag both tools fail, and our one-line error is Kafka's message.
"""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import pytest
from crc32c import crc32c

from kwire.batches import iter_batches
from tests.interop.kafka import run_tool

pytestmark = [pytest.mark.interop, pytest.mark.slow]
CLUSTER_ID = "AAAAAAAAAAAAAAAAAAAAAQ"


def without_clock(data: bytes) -> bytes:
    """Contract 1's normalisation: zero base/max timestamps (bytes 27..43 of each batch), recompute CRC."""
    out = bytearray(data)
    for view in iter_batches(data):
        pos = view.position
        size = 12 + struct.unpack_from(">i", data, pos + 8)[0]
        out[pos + 27 : pos + 43] = bytes(16)
        struct.pack_into(">I", out, pos + 17, crc32c(bytes(out[pos + 21 : pos + size])))
    return bytes(out)


def _config(root: Path, name: str) -> Path:
    cfg = root / f"{name}.properties"
    cfg.write_text(
        "process.roles=controller\nnode.id=1\ncontroller.listener.names=CONTROLLER\n"
        "listeners=CONTROLLER://127.0.0.1:9093\ncontroller.quorum.voters=1@127.0.0.1:9093\n"
        f"log.dirs={root / name}\n"
    )
    return cfg


def _ours(root: Path, args: list[str]) -> subprocess.CompletedProcess[str]:
    tool = str(Path(sys.executable).with_name("kraft-storage"))
    cfg = _config(root, "ours")
    return subprocess.run(
        [tool, "format", "-t", CLUSTER_ID, "-c", str(cfg), *args], capture_output=True, text=True, timeout=60
    )


def _kafka(root: Path, args: list[str]) -> tuple[int, str]:
    cfg = _config(root, "kafka")
    done = run_tool(
        "kafka.tools.StorageTool", ["format", "-t", CLUSTER_ID, "-c", str(cfg), *args], workdir=root
    )
    return done.returncode, done.stdout + done.stderr


CASES = [
    [],
    ["--release-version", "4.0"],
    ["--release-version", "3.9"],
    ["--release-version", "4.0-IV1", "--feature", "eligible.leader.replicas.version=1"],
    ["--feature", "group.version=0", "--feature", "transaction.version=1"],
    ["--feature", "metadata.version=25"],
]


@pytest.mark.parametrize("args", CASES, ids=lambda a: " ".join(a) or "default")
def test_bootstrap_checkpoint_matches_kafka(tmp_path: Path, args: list[str]) -> None:
    rc, out = _kafka(tmp_path, args)
    assert rc == 0, out
    ours = _ours(tmp_path, args)
    assert ours.returncode == 0, ours.stderr
    theirs_bytes = (tmp_path / "kafka" / "bootstrap.checkpoint").read_bytes()
    ours_bytes = (tmp_path / "ours" / "bootstrap.checkpoint").read_bytes()
    assert without_clock(ours_bytes) == without_clock(theirs_bytes)
    assert without_clock(ours_bytes) != ours_bytes  # the normalisation did touch a real timestamp


ERRORS = [
    ["--release-version", "3.2"],
    ["--release-version", "4.4"],
    ["--feature", "foo.version=1"],
    ["--feature", "group.version=5"],
    ["--feature", "group.version"],
    ["--release-version", "4.0-IV0", "--feature", "eligible.leader.replicas.version=1"],
    ["--release-version", "4.0", "--feature", "metadata.version=25"],
    ["--feature", "kraft.version=1"],
]


@pytest.mark.parametrize("args", ERRORS, ids=" ".join)
def test_bad_release_or_feature_fails_like_kafka(tmp_path: Path, args: list[str]) -> None:
    rc, out = _kafka(tmp_path, args)
    assert rc != 0
    ours = _ours(tmp_path, args)
    assert ours.returncode == 1
    lines = ours.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), ours.stderr
    assert lines[0].removeprefix("Error: ") in out
    assert not (tmp_path / "ours" / "meta.properties").exists()
