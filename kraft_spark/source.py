"""The ``kraft`` Spark data source (PySpark Python Data Source API): batch over files, stream over the wire.

``spark.read.format("kraft").load(path)`` — options ``includeControl`` / ``includeSnapshots`` ("true" by
default), ``batchRows`` (rows per Arrow batch, 4096).
``spark.readStream.format("kraft").option("bootstrap.controller", "host:port[,host:port...]")`` — see
:mod:`kraft_spark.live` for the streaming contracts.

Contracts:
1. One input partition per segment or snapshot file (kraft_spark.decode contract 1); partitions carry only
   the path, so executors read the files themselves (a shared or local file system).
2. The schema is :func:`row_schema`: the flat columns of kraft_spark.decode plus ``record``, the struct of
   every record type (kraft_spark.schema contract 4). Rows leave as Arrow record batches
   (kraft_spark.batches contract 2: no Python object per row but the decoded values).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql import types as T
from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.pandas.types import to_arrow_schema

from kraft_spark.batches import file_batches
from kraft_spark.batches import to_batches as to_batches
from kraft_spark.decode import COLUMNS, ROW_KEYS, LogFile, find_files
from kraft_spark.schema import record_union_fields, spark_scalar, struct_type
from kraft_spark.worker import freeze_imports


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
        freeze_imports()
        arrow = to_arrow_schema(self.schema)
        yield from file_batches(partition.file, arrow, self.batch_rows, include_control=self.include_control)


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
