"""``bootstrap.checkpoint`` at the root of the metadata log directory: the records a new cluster starts from.

Contracts (layout read from the file Kafka 4.3.1's StorageTool writes; tests compare the bytes):
1. A snapshot-format file: a control batch at offset 0 with SnapshotHeader (lastContainedLogTimestamp 0), a data
   batch at offset 1 with one framed metadata record per bootstrap record (null keys), and a control batch with
   SnapshotFooter after it; partition leader epoch 0 everywhere. Written atomically (tmp + fsync + rename).
2. :func:`read_bootstrap_metadata` returns the framed record values in order, or None when the file is absent
   (the caller then uses the defaults of the newest production metadata.version, as Kafka does); a corrupt or
   incomplete file is a StorageError naming the path.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from generated.snapshot_footer_record import SnapshotFooterRecord
from generated.snapshot_header_record import SnapshotHeaderRecord
from kraftd.storage.errors import StorageError
from kraftd.storage.fsio import atomic_write
from kwire.batches import iter_batches
from kwire.control import ControlRecordType, build_control_batch, decode_control_record
from kwire.errors import KraftError
from kwire.records import build_data_batch

BOOTSTRAP_METADATA_NAME = "bootstrap.checkpoint"


def bootstrap_metadata_bytes(values: Sequence[bytes], *, now_ms: int) -> bytes:
    """Contract 1; ``values`` are framed metadata records (kwire.metadata_frame)."""
    header = build_control_batch(
        [
            (
                ControlRecordType.SNAPSHOT_HEADER,
                SnapshotHeaderRecord(version=0, last_contained_log_timestamp=0),
            )
        ],
        base_offset=0,
        partition_leader_epoch=0,
        timestamp=now_ms,
    )
    data = build_data_batch(list(values), base_offset=1, partition_leader_epoch=0, timestamp=now_ms)
    footer = build_control_batch(
        [(ControlRecordType.SNAPSHOT_FOOTER, SnapshotFooterRecord(version=0))],
        base_offset=1 + len(values),
        partition_leader_epoch=0,
        timestamp=now_ms,
    )
    return header + data + footer


def write_bootstrap_metadata(log_dir: Path, values: Sequence[bytes], *, now_ms: int) -> Path:
    path = log_dir / BOOTSTRAP_METADATA_NAME
    atomic_write(path, bootstrap_metadata_bytes(values, now_ms=now_ms))
    return path


def read_bootstrap_metadata(log_dir: Path) -> list[bytes] | None:
    """Contract 2."""
    path = log_dir / BOOTSTRAP_METADATA_NAME
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StorageError(f"cannot read {path}: {exc}") from exc
    values: list[bytes] = []
    saw_footer = False
    try:
        for view in iter_batches(data):
            batch = view.decode()
            for rec in batch.records:
                if not batch.is_control:
                    if rec.value is None:
                        raise StorageError(f"{path}: metadata record with a null value")
                    values.append(bytes(rec.value))
                    continue
                decoded = decode_control_record(rec)
                if decoded is not None and decoded[0] == ControlRecordType.SNAPSHOT_FOOTER:
                    saw_footer = True
    except StorageError:
        raise
    except KraftError as exc:
        raise StorageError(f"{path}: corrupt bootstrap checkpoint: {exc}") from None
    if not saw_footer:
        raise StorageError(f"{path}: bootstrap checkpoint has no SnapshotFooter (incomplete)")
    return values
