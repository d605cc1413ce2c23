"""Building the SparkSession the pipeline runs on, with the ``kraft`` source registered.

Contract: Python workers run the driver's interpreter (so they see the same packages); the UI is off unless
asked for; on a ``local`` master the driver binds loopback unless SPARK_LOCAL_IP says otherwise, and on any
master the driver advertises SPARK_LOCAL_IP when it is set (executors of a loopback standalone cluster reach it).
"""

from __future__ import annotations

import os
import sys
from typing import Any


def build_session(master: str = "local[*]", app: str = "kraft-analytics", *, ui: bool = False) -> Any:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    if master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master(master)
        .appName(app)
        .config("spark.ui.enabled", "true" if ui else "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.ui.showConsoleProgress", "true")
    )
    if os.environ.get("SPARK_LOCAL_IP"):
        builder = builder.config("spark.driver.host", os.environ["SPARK_LOCAL_IP"])
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    from kraft_spark.source import register

    register(spark)
    return spark
