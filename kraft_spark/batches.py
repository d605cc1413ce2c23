"""Decoded rows as Arrow record batches of :func:`kraft_spark.source.row_schema` (the Spark reader's output).

Contracts:
1. :func:`to_batches` turns rows (dicts of every column, kraft_spark.decode) into batches of ``size`` rows.
2. :func:`file_batches` yields, for one file, batches whose rows in order equal :func:`kraft_spark.decode.
   decode_file`'s rows (decode contracts 2-4), without a dict per row: a log batch's columns are repeated over
   its records, a record's value columns come from :func:`kraft_spark.decode.decode_value`. A batch holds at
   least ``size`` rows, except the last; a log batch's records are never split between two.
3. The ``record`` union is built in one pass over the rows, bucketing each row's one set child
   (kraft_spark.schema contract 4), so a child no row sets costs one ``pa.nulls``.
4. :func:`slice_batches` yields, for slices ``(file, start, end)`` (``end`` None: to the end of the file), the
   rows of each byte range (kraft_spark.decode contract 5) in slice order, as contract 2 (a batch may hold rows
   of several slices). A file that cannot be read is its one error row, in the slice starting at byte 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema

from kraft_spark.decode import (
    ROW_KEYS,
    VALUE_KEYS,
    LogFile,
    decode_value,
    read_file,
    record_error,
    walk,
)
from kwire.records import RecordBatch, TimestampType

# The columns a record takes from its log batch (the base row of kraft_spark.decode.walk).
BATCH_KEYS = tuple(k for k in ROW_KEYS if k not in ("offset", "timestamp", "value", *VALUE_KEYS))
_ERROR = ROW_KEYS.index("error")


def _record_array(values: list[Any], field: pa.Field) -> pa.StructArray:
    n = len(values)
    buckets: dict[str, list[tuple[int, Any]]] = {}
    for i, r in enumerate(values):
        if r is not None:
            for name, value in r.items():
                buckets.setdefault(name, []).append((i, value))
    children = []
    for child in field.type:
        bucket = buckets.get(child.name)
        if bucket is None:
            children.append(pa.nulls(n, type=child.type))
            continue
        kids: list[Any] = [None] * n
        for i, value in bucket:
            kids[i] = value
        children.append(pa.array(kids, type=child.type))
    mask = pa.array([r is None for r in values], type=pa.bool_())
    return pa.StructArray.from_arrays(children, fields=list(field.type), mask=mask)


def to_record_batch(columns: Iterable[list[Any] | tuple[Any, ...]], arrow: pa.Schema) -> pa.RecordBatch:
    """One batch from its columns in schema order."""
    arrays = []
    for field, values in zip(arrow, columns, strict=True):
        if field.name == "record":
            arrays.append(_record_array(list(values), field))
        else:
            arrays.append(pa.array(values, type=field.type))
    return pa.RecordBatch.from_arrays(arrays, schema=arrow)


def to_batches(rows: Iterator[dict[str, Any]], schema: T.StructType, size: int) -> Iterator[pa.RecordBatch]:
    """Contract 1."""
    arrow = to_arrow_schema(schema)
    chunk: list[dict[str, Any]] = []
    for row in rows:
        chunk.append(row)
        if len(chunk) >= size:
            yield to_record_batch(zip(*(r.values() for r in chunk), strict=True), arrow)
            chunk = []
    if chunk:
        yield to_record_batch(zip(*(r.values() for r in chunk), strict=True), arrow)


class _Columns:
    def __init__(self) -> None:
        self.lists: list[list[Any]] = [[] for _ in ROW_KEYS]
        self.by_name = dict(zip(ROW_KEYS, self.lists, strict=True))
        self.rows = 0

    def row(self, row: dict[str, Any]) -> None:
        for column, value in zip(self.lists, row.values(), strict=True):
            column.append(value)
        self.rows += 1

    def records(self, base: dict[str, Any], batch: RecordBatch) -> None:
        recs = batch.records
        n = len(recs)
        cols = self.by_name
        for k in BATCH_KEYS:
            cols[k].extend([base[k]] * n)
        bo = batch.base_offset
        offsets = [bo + r.offset_delta for r in recs]
        cols["offset"].extend(offsets)
        if batch.timestamp_type is TimestampType.LOG_APPEND_TIME:
            cols["timestamp"].extend([batch.max_timestamp] * n)
        else:
            bt = batch.base_timestamp
            cols["timestamp"].extend([bt + r.timestamp_delta for r in recs])
        cols["value"].extend([r.value for r in recs])
        control = batch.is_control
        decoded = [decode_value(control, r) for r in recs]
        for k, column in zip(VALUE_KEYS, zip(*decoded, strict=True), strict=True):
            cols[k].extend(column)
        errors = self.lists[_ERROR]
        start = len(errors) - n
        for i, d in enumerate(decoded):
            if d[-1] is not None:
                errors[start + i] = record_error(offsets[i], d[-1])
        self.rows += n

    def take(self, arrow: pa.Schema) -> pa.RecordBatch:
        out = to_record_batch(self.lists, arrow)
        self.__init__()  # type: ignore[misc]
        return out


Slice = tuple[LogFile, int, int | None]


def file_batches(
    f: LogFile, arrow: pa.Schema, size: int, *, include_control: bool = True
) -> Iterator[pa.RecordBatch]:
    """Contract 2."""
    return slice_batches([(f, 0, None)], arrow, size, include_control=include_control)


def slice_batches(
    slices: Iterable[Slice], arrow: pa.Schema, size: int, *, include_control: bool = True
) -> Iterator[pa.RecordBatch]:
    """Contract 4."""
    cols = _Columns()
    for f, start, end in slices:
        data = read_file(f, mapped=(start, end) != (0, None))
        if isinstance(data, dict):
            if start == 0:
                cols.row(data)
            continue
        for base, batch in walk(f, data, include_control=include_control, start=start, end=end):
            if batch is None:
                cols.row(base)
            else:
                cols.records(base, batch)
            if cols.rows >= size:
                yield cols.take(arrow)
    if cols.rows:
        yield cols.take(arrow)
