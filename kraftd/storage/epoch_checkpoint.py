"""``leader-epoch-checkpoint``: Kafka's CheckpointFile text format, version 0.

File: line 1 the version (``0``), line 2 the entry count, then ``<epoch> <startOffset>`` per line.

Contracts:
1. Entries are strictly increasing in both epoch and start offset.
2. Writes are atomic (tmp + fsync + rename, kraftd.storage.fsio).
3. Reading a malformed file raises MalformedFileError; a missing one reads as an empty list.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from kraftd.storage.errors import MalformedFileError
from kraftd.storage.fsio import atomic_write

EPOCH_CHECKPOINT_FILE = "leader-epoch-checkpoint"
CHECKPOINT_VERSION = 0


class EpochEntry(NamedTuple):
    epoch: int
    start_offset: int


def encode_entries(entries: Sequence[EpochEntry]) -> str:
    lines = [str(CHECKPOINT_VERSION), str(len(entries))]
    lines += [f"{e.epoch} {e.start_offset}" for e in entries]
    return "\n".join(lines) + "\n"


def decode_entries(text: str, where: str) -> list[EpochEntry]:
    lines = text.splitlines()
    if len(lines) < 2:
        raise MalformedFileError(f"{where}: expected a version line and a count line")
    if lines[0].strip() != str(CHECKPOINT_VERSION):
        raise MalformedFileError(f"{where}: unsupported version {lines[0].strip()!r}")
    try:
        count = int(lines[1].strip())
    except ValueError:
        raise MalformedFileError(f"{where}: entry count {lines[1]!r} is not an integer") from None
    body = [line for line in lines[2:] if line.strip()]
    if count != len(body):
        raise MalformedFileError(f"{where}: count says {count} entries but {len(body)} follow")
    entries: list[EpochEntry] = []
    for line in body:
        parts = re.split(r"\s+", line.strip())
        if len(parts) != 2:
            raise MalformedFileError(f"{where}: bad entry line {line!r}")
        try:
            entry = EpochEntry(int(parts[0]), int(parts[1]))
        except ValueError:
            raise MalformedFileError(f"{where}: bad entry line {line!r}") from None
        if entries and (entry.epoch <= entries[-1].epoch or entry.start_offset <= entries[-1].start_offset):
            raise MalformedFileError(f"{where}: entries out of order at {line!r}")
        entries.append(entry)
    return entries


class EpochCheckpointFile:
    def __init__(self, partition_dir: Path) -> None:
        self.path = partition_dir / EPOCH_CHECKPOINT_FILE

    def write(self, entries: Sequence[EpochEntry]) -> None:
        atomic_write(self.path, encode_entries(entries).encode("ascii"))

    def read(self) -> list[EpochEntry]:
        try:
            text = self.path.read_text("ascii")
        except FileNotFoundError:
            return []
        except UnicodeDecodeError:
            raise MalformedFileError(f"{self.path}: not ASCII text") from None
        return decode_entries(text, str(self.path))
