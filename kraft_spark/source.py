"""The ``kraft`` Spark data source (PySpark Python Data Source API): batch over files, stream over the wire.

``spark.read.format("kraft").load(path)`` — options ``includeControl`` / ``includeSnapshots`` ("true" by
default), ``batchRows`` (rows per Arrow batch, 4096).
``spark.readStream.format("kraft").option("bootstrap.controller", "host:port[,host:port...]")`` — see
:mod:`kraft_spark.live` for the streaming contracts.

Contracts:
1. One input partition per segment or snapshot file (kraft_spark.decode contract 1); partitions carry only
   the path, so executors read the files themselves (a shared or local file system).
2. The schema is :func:`row_schema`: the flat columns of kraft_spark.decode plus ``record``, the struct of
   every record type (kraft_spark.schema contract 4). Rows leave as Arrow record batches.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql import types as T
from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.pandas.types import to_arrow_schema

from kraft_spark.decode import COLUMNS, ROW_KEYS, LogFile, decode_file, find_files
from kraft_spark.schema import record_union_fields, spark_scalar, struct_type


def row_schema() -> T.StructType:
    """Columns in :data:`kraft_spark.decode.ROW_KEYS` order (rows are transposed positionally)."""
    types = {name: spark_scalar(ddl) for name, ddl in COLUMNS}
    types["record"] = T.StructType(
        [T.StructField(n, struct_type(cls), True) for n, cls in record_union_fields()]
    )
    return T.StructType([T.StructField(name, types[name], True) for name in ROW_KEYS])


def _flag(options: dict[str, str], key: str, default: bool) -> bool:
    value = options.get(key, options.get(key.lower()))
    if value is None:
        return default
    return value.strip().lower() in ("true", "1", "yes")


def _columns(chunk: list[dict[str, Any]], arrow: pa.Schema) -> pa.RecordBatch:
    """Column by column: flat columns as lists; the record union in one pass over the rows, bucketing each
    row's one set child (kraft_spark.schema contract 4), so a child no row sets costs one ``pa.nulls``."""
    columns = list(zip(*(row.values() for row in chunk), strict=True))
    arrays = []
    for field, values in zip(arrow, columns, strict=True):
        if field.name != "record":
            arrays.append(pa.array(values, type=field.type))
            continue
        buckets: dict[str, list[tuple[int, Any]]] = {}
        for i, r in enumerate(values):
            if r is not None:
                for name, value in r.items():
                    buckets.setdefault(name, []).append((i, value))
        children = []
        for child in field.type:
            bucket = buckets.get(child.name)
            if bucket is None:
                children.append(pa.nulls(len(chunk), type=child.type))
                continue
            kids: list[Any] = [None] * len(chunk)
            for i, value in bucket:
                kids[i] = value
            children.append(pa.array(kids, type=child.type))
        mask = pa.array([r is None for r in values], type=pa.bool_())
        arrays.append(pa.StructArray.from_arrays(children, fields=list(field.type), mask=mask))
    return pa.RecordBatch.from_arrays(arrays, schema=arrow)


def to_batches(rows: Iterator[dict[str, Any]], schema: T.StructType, size: int) -> Iterator[pa.RecordBatch]:
    arrow = to_arrow_schema(schema)
    chunk: list[dict[str, Any]] = []
    for row in rows:
        chunk.append(row)
        if len(chunk) >= size:
            yield _columns(chunk, arrow)
            chunk = []
    if chunk:
        yield _columns(chunk, arrow)


class FilePartition(InputPartition):
    def __init__(self, file: LogFile) -> None:
        super().__init__(file.path)
        self.file = file


class KraftBatchReader(DataSourceReader):
    def __init__(self, options: dict[str, str], schema: T.StructType) -> None:
        self.path = options.get("path", "")
        self.include_control = _flag(options, "includeControl", True)
        self.include_snapshots = _flag(options, "includeSnapshots", True)
        self.batch_rows = int(options.get("batchRows", options.get("batchrows", "4096")))
        self.schema = schema

    def partitions(self) -> list[InputPartition]:
        return [FilePartition(f) for f in find_files(self.path, include_snapshots=self.include_snapshots)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, FilePartition)
        rows = decode_file(partition.file, include_control=self.include_control)
        yield from to_batches(rows, self.schema, self.batch_rows)


class KraftDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "kraft"

    def schema(self) -> T.StructType:
        return row_schema()

    def reader(self, schema: T.StructType) -> DataSourceReader:
        if not self.options.get("path"):
            raise ValueError("the kraft source needs a path: spark.read.format('kraft').load(PATH)")
        return KraftBatchReader(dict(self.options), schema)

    def streamReader(self, schema: T.StructType) -> DataSourceStreamReader:
        from kraft_spark.live import KraftStreamReader

        return KraftStreamReader(dict(self.options), schema)


def register(spark: Any) -> None:
    spark.dataSource.register(KraftDataSource)
