"""Helpers of the Spark pipeline tests: Kafka metadata record frames, bounded waits, the streaming sink's offset."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def frame(api_key: int, version: int, body: bytes) -> bytes:
    # Kafka's metadata record frame: unsigned varints frame version 1, api key, version, then the body.
    return bytes([1, api_key, version]) + body


NO_OP = frame(20, 0, b"\x00")


def wait_until(what: str, predicate: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.25)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def max_offset(spark: Any, out: Path) -> int:
    """The highest offset the streaming sink committed under ``out`` (-1 before the first batch)."""
    if not (out / "_spark_metadata").exists():
        return -1
    try:  # the sink's metadata log names the committed files only
        row = spark.read.parquet(str(out)).agg({"offset": "max"}).collect()[0]
    except Exception:  # noqa: BLE001 - no batch committed yet
        return -1
    return -1 if row[0] is None else int(row[0])
