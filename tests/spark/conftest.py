"""One local[2] SparkSession for the whole test session (JVM start-up is seconds; share it).

Tests here are marked ``spark`` (run them alone with ``-m spark``). Without pyspark or java they skip with one
line, except under ``CI=true``, where they fail: CI installs the ``spark`` extra and Java 17.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CI = os.environ.get("CI", "").lower() == "true"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if Path(str(item.fspath)).is_relative_to(here):
            item.add_marker(pytest.mark.spark)


def _unavailable(reason: str) -> None:
    if CI:
        pytest.fail(f"Spark is required under CI: {reason}", pytrace=False)
    pytest.skip(f"Spark unavailable: {reason}")


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    if shutil.which("java") is None:
        _unavailable("no java on PATH (Java 17 is needed)")
    try:
        import pyspark  # noqa: F401
    except ImportError:
        _unavailable("pyspark is not installed (pip install -e '.[spark]')")
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    from kraft_spark.session import build_session

    session = build_session("local[2]", "kraftd-tests")
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture(scope="session")
def type_ids(tmp_path_factory: pytest.TempPathFactory) -> dict[str, int]:
    """Kafka's MetadataRecordType name → api key, from Kafka's own jars."""
    from tests.spark.oracle import metadata_type_ids

    return metadata_type_ids(tmp_path_factory.mktemp("types"))
