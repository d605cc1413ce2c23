"""Decoding metadata log segments and snapshots into rows: plain Python, no Spark (the bench's baseline too).

Contracts:
1. Files: under a path, every ``<20 digits>.log`` segment and ``<20 digits>-<10 digits>.checkpoint`` snapshot
   inside a ``__cluster_metadata-<n>`` directory (a path naming one such file is read alone). The node is the
   ``node.id`` of the ``meta.properties`` beside that directory, else -1.
2. One row per record, in file order, with the columns of :data:`COLUMNS`. A metadata record's value is
   Kafka's frame: unsigned varints frame version, api key, record version, then the body; a control record's
   is kwire.control's (int16 key version + int16 type key, value at version 0).
3. Nothing raises on bad bytes: a batch whose CRC fails is one row with ``crc_ok`` false and ``error`` set
   (then the walk goes on by its Length); a torn tail or unusable framing is one row with ``error`` set and
   ends the file; a record that does not decode is its row with ``error`` set and no ``record``.
4. ``include_control=False`` drops control records (not error rows); ``include_snapshots=False`` skips
   snapshot files.
5. A byte range ``[start, end)`` of a file yields exactly the rows whose ``position`` (the batch's, or the error's)
   lies in it: the walk always starts at byte 0 and hops batch by batch (framing only before ``start``), so the
   ranges of a partition of ``[0, size)`` together yield the file's rows, in order, once.
"""

from __future__ import annotations

import mmap
import os
import re
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kraft_spark.schema import CONTROL_NAMES, metadata_classes, snake, to_json, to_value
from kwire.codec import read_uvarint
from kwire.control import ControlRecordType, decode_control_record
from kwire.errors import KraftError
from kwire.records import HEADER_SIZE, LOG_OVERHEAD, Buffer, RecordBatch, decode_at, peek_batch

SEGMENT_RE = re.compile(r"^(\d{20})\.log$")
SNAPSHOT_RE = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")

# (name, Spark DDL type) of every flat column; ``record`` is appended by the schema (struct of record types).
COLUMNS: tuple[tuple[str, str], ...] = (
    ("node", "int"),
    ("file", "string"),
    ("file_kind", "string"),
    ("position", "long"),
    ("batch_base_offset", "long"),
    ("batch_last_offset", "long"),
    ("offset", "long"),
    ("epoch", "int"),
    ("timestamp", "long"),
    ("producer_id", "long"),
    ("producer_epoch", "short"),
    ("is_transactional", "boolean"),
    ("is_control", "boolean"),
    ("control_type", "string"),
    ("record_type", "string"),
    ("record_type_id", "int"),
    ("record_version", "int"),
    ("value", "binary"),
    ("record_json", "string"),
    ("crc_ok", "boolean"),
    ("error", "string"),
)


# Every row dict has every column, in schema order (the record struct just before record_json), so rows
# transpose into columns without per-key lookups.
ROW_KEYS: tuple[str, ...] = (*[c for c, _ in COLUMNS[:-3]], "record", *[c for c, _ in COLUMNS[-3:]])
_TEMPLATE: dict[str, Any] = dict.fromkeys(ROW_KEYS)


@dataclass(frozen=True, slots=True)
class LogFile:
    path: str
    kind: str  # "segment" or "snapshot"
    node: int
    base_offset: int


def _node_of(partition_dir: Path) -> int:
    meta = partition_dir.parent / "meta.properties"
    try:
        for line in meta.read_text().splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "node.id":
                return int(value.strip())
    except (OSError, ValueError):
        pass
    return -1


def _classify(path: Path) -> LogFile | None:
    m = SEGMENT_RE.match(path.name)
    if m:
        return LogFile(str(path), "segment", _node_of(path.parent), int(m.group(1)))
    m = SNAPSHOT_RE.match(path.name)
    if m:
        return LogFile(str(path), "snapshot", _node_of(path.parent), int(m.group(1)))
    return None


def find_files(root: str | Path, *, include_snapshots: bool = True) -> list[LogFile]:
    """Every segment and snapshot under ``root`` (contract 1), sorted by node, kind, base offset."""
    root = Path(root)
    found: list[LogFile] = []
    if root.is_file():
        f = _classify(root)
        found = [f] if f else []
    else:
        for d in sorted(p for p in root.rglob("__cluster_metadata-*") if p.is_dir()):
            found.extend(f for f in map(_classify, sorted(d.iterdir())) if f is not None)
        if not found and root.name.startswith("__cluster_metadata-"):
            found.extend(f for f in map(_classify, sorted(root.iterdir())) if f is not None)
    if not include_snapshots:
        found = [f for f in found if f.kind != "snapshot"]
    return sorted(found, key=lambda f: (f.node, f.path, f.kind != "snapshot", f.base_offset))


def _blank(f: LogFile, position: int, **values: Any) -> dict[str, Any]:
    row = _TEMPLATE.copy()
    row["node"], row["file"], row["file_kind"], row["position"] = f.node, f.path, f.kind, position
    row.update(values)
    return row


def decode_metadata_value(value: bytes) -> tuple[int, int, Any]:
    """(api key, version, decoded object or None for an unknown type) of a metadata record value."""
    frame, pos = read_uvarint(value, 0)
    if frame != 1:
        raise KraftError(f"metadata record frame version {frame} is not 1")
    api_key, pos = read_uvarint(value, pos)
    version, pos = read_uvarint(value, pos)
    cls = metadata_classes().get(api_key)
    if cls is None:
        return api_key, version, None
    return api_key, version, cls.decode(value[pos:], version)  # type: ignore[attr-defined]


# The columns a record's key and value determine (in this order), the rest of its row coming from its batch.
VALUE_KEYS: tuple[str, ...] = (
    "control_type", "record_type", "record_type_id", "record_version", "record", "record_json", "error"
)  # fmt: skip
Decoded = tuple[str | None, str | None, int | None, int | None, dict[str, Any] | None, str | None, str | None]

# Decoded values by (is_control, key, value): records repeat byte for byte (NoOpRecord, FeatureLevelRecord,
# unchanged registrations), so most decode once. Small values only and a bounded number of them.
_MEMO: dict[tuple[bool, bytes | None, bytes | None], Decoded] = {}
_MEMO_ENTRIES = 8192
_MEMO_VALUE_BYTES = 512


def decode_value(is_control: bool, rec: Any) -> Decoded:
    """The :data:`VALUE_KEYS` columns of a record (contract 3; ``error`` without its offset prefix). The
    ``record`` dict may be shared by rows of equal bytes: read-only."""
    value = rec.value
    if value is not None and len(value) > _MEMO_VALUE_BYTES:
        return _decode_value(is_control, rec)
    memo_key = (is_control, rec.key if is_control else None, value)
    out = _MEMO.get(memo_key)
    if out is None:
        if len(_MEMO) >= _MEMO_ENTRIES:
            _MEMO.clear()
        out = _MEMO[memo_key] = _decode_value(is_control, rec)
    return out


def _decode_value(is_control: bool, rec: Any) -> Decoded:
    out: dict[str, Any] = {}
    try:
        if is_control:
            decoded = decode_control_record(rec)
            kind = struct.unpack_from(">h", rec.key or b"\0\0\0\0", 2)[0]
            out["record_type_id"] = kind
            out["record_version"] = 0
            if decoded is None:
                out["control_type"] = f"Unknown({kind})"
                return _decoded(out)
            ctype, obj = decoded
            name = CONTROL_NAMES[ControlRecordType(ctype)]
            out["control_type"] = out["record_type"] = name
        else:
            if rec.value is None:
                raise KraftError("a data record with a null value is not a metadata record")
            api_key, version, obj = decode_metadata_value(rec.value)
            out["record_type_id"], out["record_version"] = api_key, version
            if obj is None:
                return _decoded(out)
            name = type(obj).__name__
            out["record_type"] = name
        out["record"] = {snake(name): to_value(obj, out["record_version"])}
        out["record_json"] = to_json(obj, out["record_version"])
    except (KraftError, struct.error, ValueError) as exc:
        out["error"] = str(exc)
    return _decoded(out)


def _decoded(out: dict[str, Any]) -> Decoded:
    return tuple(out.get(k) for k in VALUE_KEYS)  # type: ignore[return-value]


def record_error(offset: int, detail: str) -> str:
    return f"record at offset {offset} does not decode: {detail}"


def _record_row(base: dict[str, Any], batch: RecordBatch, rec: Any) -> dict[str, Any]:
    row = base.copy()
    row["offset"] = offset = batch.offset_of(rec)
    row["timestamp"] = batch.timestamp_of(rec)
    row["value"] = rec.value
    decoded = decode_value(batch.is_control, rec)
    row.update(zip(VALUE_KEYS, decoded, strict=True))
    if decoded[-1] is not None:
        row["error"] = record_error(offset, decoded[-1])
    return row


def walk(
    f: LogFile, data: Buffer, *, include_control: bool = True, start: int = 0, end: int | None = None
) -> Iterator[tuple[dict[str, Any], RecordBatch | None]]:
    """The batches of ``data`` in order: (base row, batch) for a batch whose records are rows (the base row holds
    the batch's columns), (row, None) for a row of its own (an error; contract 3). Contract 4's filter applied;
    only positions in ``[start, end)`` (contract 5)."""
    pos, size = 0, len(data)
    stop = size if end is None else min(end, size)
    while pos < stop:
        remaining = size - pos
        length = struct.unpack_from(">i", data, pos + 8)[0] if remaining >= LOG_OVERHEAD else -1
        if remaining < LOG_OVERHEAD or remaining < max(LOG_OVERHEAD + length, HEADER_SIZE):
            if pos >= start:
                yield _blank(f, pos, error=f"torn batch at byte {pos}: {remaining} bytes remain"), None
            return
        try:
            header = peek_batch(data, pos, verify_crc=pos >= start)
        except KraftError as exc:
            if pos >= start:
                yield _blank(f, pos, error=f"unreadable batch framing at byte {pos}: {exc}"), None
            return
        if pos < start:  # before the range: the same hop as below, nothing checked but the framing
            pos += header.size
            continue
        base = _blank(
            f,
            pos,
            batch_base_offset=header.base_offset,
            batch_last_offset=header.last_offset,
            epoch=header.partition_leader_epoch,
            is_control=header.is_control,
            is_transactional=header.is_transactional,
            crc_ok=bool(header.crc_ok),
        )
        if not header.crc_ok:
            yield {**base, "error": f"batch at offset {header.base_offset}: CRC-32C mismatch"}, None
            pos += header.size
            continue
        try:
            batch = decode_at(data, header, verify_crc=False)
        except KraftError as exc:
            yield {**base, "error": f"batch at offset {header.base_offset} does not decode: {exc}"}, None
            pos += header.size
            continue
        base["producer_id"], base["producer_epoch"] = batch.producer_id, batch.producer_epoch
        if include_control or not batch.is_control:
            yield base, batch
        pos += header.size


def decode_buffer(f: LogFile, data: Buffer, *, include_control: bool = True) -> Iterator[dict[str, Any]]:
    """Rows of every record in ``data`` (contracts 2-4)."""
    for base, batch in walk(f, data, include_control=include_control):
        if batch is None:
            yield base
        else:
            for rec in batch.records:
                yield _record_row(base, batch, rec)


def read_file(f: LogFile, *, mapped: bool = False) -> Buffer | dict[str, Any]:
    """The bytes of ``f`` (with ``mapped``, a read-only memory map: a byte range touches only the pages it
    walks), or the one error row of a file that cannot be read (contract 3)."""
    try:
        if not mapped:
            return Path(f.path).read_bytes()
        with open(f.path, "rb") as fh:
            if os.fstat(fh.fileno()).st_size == 0:
                return b""
            return memoryview(mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ))
    except OSError as exc:
        return _blank(f, 0, error=f"cannot read {f.path}: {exc.strerror or exc}")


def decode_file(f: LogFile, *, include_control: bool = True) -> Iterator[dict[str, Any]]:
    data = read_file(f)
    if isinstance(data, dict):
        yield data
        return
    yield from decode_buffer(f, data, include_control=include_control)
