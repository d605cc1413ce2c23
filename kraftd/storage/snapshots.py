"""Snapshot files of ``__cluster_metadata-0`` (KIP-630 as shipped).

Contracts:
1. A snapshot with id (end offset, epoch) lives in ``<20-digit end offset>-<10-digit epoch>.checkpoint``; it is
   written as ``.checkpoint.part``, fsynced, renamed and the directory fsynced, so a crash leaves either no file
   or a whole one. Stray ``.part`` files are deleted on open.
2. The bootstrap checkpoint (id 0-0) is not a snapshot of the log: it is never listed here nor deleted.
3. :func:`latest_snapshot` returns the newest complete snapshot; a file that fails to parse is reported and
   skipped (the next older one is used), never loaded.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
from pathlib import Path

from kraftd.core.log import OffsetAndEpoch
from kraftd.core.snapshots import Snapshot, read_snapshot
from kraftd.storage.errors import LogIOError
from kraftd.storage.fsio import fsync_dir, fsync_fd
from kwire.errors import KraftError

log = logging.getLogger("kraftd.storage.snapshots")

SUFFIX = ".checkpoint"
PART = ".checkpoint.part"
_NAME = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")


def snapshot_name(sid: OffsetAndEpoch) -> str:
    return f"{sid.offset:020d}-{sid.epoch:010d}{SUFFIX}"


def list_snapshots(partition_dir: Path) -> list[OffsetAndEpoch]:
    """Ids of the snapshot files present, oldest first (contract 2: the 0-0 bootstrap is left out)."""
    found = []
    for p in partition_dir.iterdir():
        mt = _NAME.match(p.name)
        if mt is not None:
            sid = OffsetAndEpoch(int(mt.group(1)), int(mt.group(2)))
            if sid.offset > 0:
                found.append(sid)
    return sorted(found, key=lambda s: (s.offset, s.epoch))


def delete_partial(partition_dir: Path) -> None:
    for p in partition_dir.glob("*" + PART):
        with contextlib.suppress(FileNotFoundError):
            p.unlink()


def write_snapshot(partition_dir: Path, snap: Snapshot, *, fsync: bool = True) -> Path:
    """Contract 1."""
    final = partition_dir / snapshot_name(snap.snapshot_id)
    part = final.with_name(final.name[: -len(SUFFIX)] + PART)
    try:
        fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            view = memoryview(snap.data)
            while view:
                view = view[os.write(fd, view) :]
            if fsync:
                fsync_fd(fd, str(part))
        finally:
            os.close(fd)
        os.replace(part, final)
    except OSError as exc:
        raise LogIOError(f"writing snapshot {final} failed: {exc}") from exc
    if fsync:
        fsync_dir(partition_dir)
    return final


def latest_snapshot(partition_dir: Path) -> Snapshot | None:
    """Contract 3."""
    for sid in reversed(list_snapshots(partition_dir)):
        path = partition_dir / snapshot_name(sid)
        try:
            return read_snapshot(sid, path.read_bytes())
        except (OSError, KraftError) as exc:
            log.error("snapshot %s is unusable, skipping it: %s", path.name, exc)
    return None


def delete_snapshots_before(partition_dir: Path, offset: int, *, fsync: bool = True) -> list[Path]:
    """Delete every snapshot whose end offset is below ``offset`` (older than the one the log starts at)."""
    gone = []
    for sid in list_snapshots(partition_dir):
        if sid.offset < offset:
            path = partition_dir / snapshot_name(sid)
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                gone.append(path)
    if gone and fsync:
        fsync_dir(partition_dir)
    return gone
