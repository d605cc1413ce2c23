"""kraft_spark.session: the session the pipeline builds (contract 2: interpreted projections)."""

from __future__ import annotations

from typing import Any

from kraft_spark.source import row_schema


def test_the_scans_per_task_projection_is_interpreted_not_generated(spark: Any) -> None:
    """Every task of the ``kraft`` scan builds the UnsafeProjection of its rows through Spark's
    CodeGeneratorWithInterpretedFallback (MapInBatchEvaluatorFactory): on this session that is the interpreted
    projection, not source generated again per task."""
    jvm = spark._jvm
    schema = jvm.org.apache.spark.sql.types.DataType.fromJson(row_schema().json())
    projection = jvm.org.apache.spark.sql.catalyst.expressions.UnsafeProjection.create(schema)
    assert projection.getClass().getSimpleName() == "InterpretedUnsafeProjection"
    assert spark.conf.get("spark.sql.codegen.wholeStage") == "true"
