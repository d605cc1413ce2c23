"""The bootstrap checkpoint ``00000000000000000000-0000000000.checkpoint`` and ``--initial-controllers``.

Contracts:
1. ``--initial-controllers`` is ``id@host:port:directoryId`` joined by commas (Kafka's DynamicVoters form;
   IPv6 hosts in brackets); ids and directory ids must be unique; errors are FormatInputError naming the entry.
2. The checkpoint is a snapshot at id (end offset 0, epoch 0): a control batch with SnapshotHeader,
   KRaftVersion (1) and KRaftVoters records at offsets 0-2, then a control batch with SnapshotFooter at offset
   3; every batch has partition leader epoch 0. It is written to a temp file, fsynced, then renamed.
3. :func:`read_bootstrap_checkpoint` returns the kraft.version and voters recorded, or raises StorageError.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from kraftd.config import Endpoint
from kraftd.storage import controlrec
from kraftd.storage.controlrec import BootstrapVoter as BootstrapVoter  # re-exported
from kraftd.storage.errors import StorageError
from kraftd.storage.fsio import atomic_write
from kraftd.storage.uuids import uuid_from_str

BOOTSTRAP_CHECKPOINT_NAME = "00000000000000000000-0000000000.checkpoint"


class FormatInputError(StorageError):
    """An operator-supplied voter list is malformed."""


def parse_initial_controllers(text: str, listener_name: str) -> list[BootstrapVoter]:
    """Parse ``id@host:port:directoryId,...`` (contract 1); endpoints get ``listener_name``."""
    form = "id@host:port:directoryId"
    voters: list[BootstrapVoter] = []
    for item in (p.strip() for p in text.split(",")):
        if not item:
            continue
        id_text, at, rest = item.partition("@")
        if not at:
            raise FormatInputError(f"--initial-controllers: {item!r} has no '@'; expected {form}")
        try:
            node_id = int(id_text)
        except ValueError:
            raise FormatInputError(
                f"--initial-controllers: {item!r} has a non-numeric id; expected {form}"
            ) from None
        hostport, colon, dir_text = rest.rpartition(":")
        if not colon:
            raise FormatInputError(f"--initial-controllers: {item!r} has no directory id; expected {form}")
        if hostport.startswith("["):
            close = hostport.find("]")
            host, port_text = hostport[1:close], hostport[close + 2 :]
            ok = close > 0 and hostport[close + 1 : close + 2] == ":"
        else:
            host, sep, port_text = hostport.rpartition(":")
            ok = bool(sep) and bool(host)
        if not ok or not port_text.isdigit() or not 0 < int(port_text) < 65536:
            raise FormatInputError(f"--initial-controllers: {item!r} has a bad host:port; expected {form}")
        try:
            dir_id = uuid_from_str(dir_text)
        except ValueError as exc:
            raise FormatInputError(f"--initial-controllers: {item!r}: {exc}") from None
        if any(v.node_id == node_id for v in voters):
            raise FormatInputError(f"--initial-controllers: voter id {node_id} appears twice")
        if any(v.directory_id == dir_id for v in voters):
            raise FormatInputError(f"--initial-controllers: directory id {dir_text} appears twice")
        voters.append(BootstrapVoter(node_id, dir_id, (Endpoint(listener_name, host, int(port_text)),)))
    if not voters:
        raise FormatInputError(f"--initial-controllers: no voters given; expected {form},...")
    return voters


def write_bootstrap_checkpoint(partition_dir: Path, voters: Sequence[BootstrapVoter], *, now_ms: int) -> Path:
    """Write the bootstrap snapshot (contract 2)."""
    path = partition_dir / BOOTSTRAP_CHECKPOINT_NAME
    atomic_write(path, controlrec.bootstrap_snapshot_bytes(voters, now_ms=now_ms))
    return path


def read_bootstrap_checkpoint(path: Path) -> tuple[int, list[BootstrapVoter]]:
    """The kraft.version and voters a bootstrap checkpoint records (contract 3)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise StorageError(f"cannot read {path}: {exc}") from exc
    return controlrec.read_bootstrap_snapshot(data, str(path))
