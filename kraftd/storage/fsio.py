"""Durable small-file writes.

Contracts:
1. :func:`atomic_write` leaves either the old file or the complete new one, never a mix: it writes
   ``<name>.tmp``, fsyncs it, renames it over ``<name>`` and fsyncs the directory. The tmp file is removed on
   failure.
2. Every fsync failure surfaces as :class:`LogIOError` (fatal, see kraftd.storage.errors).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from kraftd.storage.errors import LogIOError


def fsync_fd(fd: int, what: str) -> None:
    try:
        os.fsync(fd)
    except OSError as exc:
        raise LogIOError(f"fsync of {what} failed: {exc}") from exc


def fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as exc:
        raise LogIOError(f"cannot open directory {path} to fsync it: {exc}") from exc
    try:
        fsync_fd(fd, f"directory {path}")
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            fsync_fd(fd, str(tmp))
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as exc:
        raise LogIOError(f"writing {path} failed: {exc}") from exc
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    fsync_dir(path.parent)
