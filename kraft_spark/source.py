"""The ``kraft`` Spark data source (PySpark Python Data Source API): batch over files, stream over the wire.

``spark.read.format("kraft").load(path)`` — options ``includeControl`` / ``includeSnapshots`` ("true" by
default), ``batchRows`` (rows per Arrow batch, 4096), ``partitions`` (input partitions; by default
:func:`partition_count`: the session's default parallelism as :func:`register` saw it, fewer for a small log,
more for one over ``MAX_SPLIT_BYTES`` a partition).
``spark.readStream.format("kraft").option("bootstrap.controller", "host:port[,host:port...]")`` — see
:mod:`kraft_spark.live` for the streaming contracts (one partition per micro-batch: its offset range).

Contracts:
1. The files (kraft_spark.decode contract 1), in their order, are cut into ``partitions`` byte ranges of equal
   size (:func:`plan_slices`: a partition is one or more slices ``(file, start, end)``, a file's last slice
   open-ended, so bytes appended after planning are read as before); a range yields the rows of the batches
   that start in it (kraft_spark.decode contract 5). The partitions' rows, in partition order, are the files'
   rows in file order, each once: the same rows as one partition per file. Partitions carry only paths and
   offsets, so executors read the files themselves (a shared or local file system). Equal ranges give every
   task slot the same work (a partition per file left a 0.6-file task behind on 2 slots), and one task per
   slot pays the per-task costs once (docs/PERFORMANCE.md, "Spark", session 13).
2. The schema is :func:`row_schema`: the flat columns of kraft_spark.decode plus ``record``, the struct of
   every record type (kraft_spark.schema contract 4). Rows leave as Arrow record batches
   (kraft_spark.batches contract 2: no Python object per row but the decoded values).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql import types as T
from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.pandas.types import to_arrow_schema

from kraft_spark.batches import Slice, slice_batches
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


# Below MIN_SPLIT_BYTES a partition costs more in per-task set-up than a second slot saves; above
# MAX_SPLIT_BYTES (Spark's own spark.sql.files.maxPartitionBytes default) a failed task would redo too much.
MIN_SPLIT_BYTES = 256 * 1024
MAX_SPLIT_BYTES = 128 * 1024 * 1024


def partition_count(total_bytes: int, parallelism: int) -> int:
    """The default ``partitions`` (contract 1): one per task slot, fewer for a small log, more for a huge one."""
    small = min(parallelism, -(-total_bytes // MIN_SPLIT_BYTES))
    return max(1, small, -(-total_bytes // MAX_SPLIT_BYTES))


def plan_slices(files: list[LogFile], sizes: list[int], n: int) -> list[list[Slice]]:
    """Contract 1: ``files`` (with their sizes in bytes) cut at multiples of ``total / n`` bytes; at most ``n``
    partitions, none empty, a file of size 0 or less in the partition its position falls into."""
    total = sum(max(size, 0) for size in sizes)
    n = max(1, min(n, total))
    cuts = [total * k // n for k in range(1, n)]
    parts: list[list[Slice]] = [[]]
    at = 0  # bytes of the files before this one
    for f, size in zip(files, sizes, strict=True):
        size = max(size, 0)
        start = 0
        while cuts and cuts[0] < at + size:
            cut = cuts.pop(0) - at
            if cut > start:
                parts[-1].append((f, start, cut))
                start = cut
            if parts[-1]:
                parts.append([])
        parts[-1].append((f, start, None))
        at += size
    return [p for p in parts if p]


class SlicesPartition(InputPartition):
    def __init__(self, slices: list[Slice]) -> None:
        super().__init__([(f.path, start, end) for f, start, end in slices])
        self.slices = slices


class KraftBatchReader(DataSourceReader):
    def __init__(self, options: dict[str, str], schema: T.StructType, parallelism: int = 1) -> None:
        self.path = options.get("path", "")
        self.include_control = _flag(options, "includeControl", True)
        self.include_snapshots = _flag(options, "includeSnapshots", True)
        self.batch_rows = int(options.get("batchRows", options.get("batchrows", "4096")))
        wanted = options.get("partitions")
        self.partitions_wanted = int(wanted) if wanted else None
        self.parallelism = parallelism
        self.schema = schema

    def partitions(self) -> list[InputPartition]:
        files = find_files(self.path, include_snapshots=self.include_snapshots)
        sizes = [_size(f.path) for f in files]
        n = self.partitions_wanted or partition_count(sum(sizes), self.parallelism)
        return [SlicesPartition(p) for p in plan_slices(files, sizes, n)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, SlicesPartition)
        freeze_imports()
        arrow = to_arrow_schema(self.schema)
        yield from slice_batches(
            partition.slices, arrow, self.batch_rows, include_control=self.include_control
        )


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 1  # read as one error row (kraft_spark.decode contract 3) by the partition it lands in


class KraftDataSource(DataSource):
    parallelism = os.cpu_count() or 1  # what partitions() aims at when no ``partitions`` option says

    @classmethod
    def name(cls) -> str:
        return "kraft"

    def schema(self) -> T.StructType:
        return row_schema()

    def reader(self, schema: T.StructType) -> DataSourceReader:
        if not self.options.get("path"):
            raise ValueError("the kraft source needs a path: spark.read.format('kraft').load(PATH)")
        return KraftBatchReader(dict(self.options), schema, self.parallelism)

    def streamReader(self, schema: T.StructType) -> DataSourceStreamReader:
        from kraft_spark.live import KraftStreamReader

        return KraftStreamReader(dict(self.options), schema)


def source_for(parallelism: int) -> type[KraftDataSource]:
    """KraftDataSource aiming at ``parallelism`` partitions. The planner runs in a Python worker that cannot ask
    the session, so the value travels in the class: defined here, not importable by name, it is pickled by
    value (cloudpickle) with the data source."""
    cls = type("KraftDataSource", (KraftDataSource,), {"parallelism": max(1, parallelism)})
    cls.__qualname__ = "source_for.<locals>.KraftDataSource"
    return cls


def register(spark: Any) -> None:
    """Registers ``kraft`` aiming at the session's default parallelism (contract 1)."""
    spark.dataSource.register(source_for(spark.sparkContext.defaultParallelism))
