"""Shared real-process quorums for the interop tests (JVM start-up is seconds: share where state allows)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.interop.kafka import MixedQuorum, classpath


def _quorum(
    tmp_path_factory: pytest.TempPathFactory, name: str, kinds: list[str], **kw: object
) -> Iterator[MixedQuorum]:
    root: Path = tmp_path_factory.mktemp(name)
    q = MixedQuorum(root, kinds, **kw)  # type: ignore[arg-type]
    q.start_all()
    try:
        yield q
    finally:
        q.stop_all()


@pytest.fixture(scope="module")
def kraftd_quorum(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MixedQuorum]:
    """Three kraftd controllers (KIP-853 bootstrap, so directory ids are known to everyone)."""
    classpath()  # the Kafka tools run against it: skip or fail first, before any process starts
    yield from _quorum(tmp_path_factory, "kraftd3", ["kraftd"] * 3, bootstrap="kip853")


@pytest.fixture(scope="module")
def kafka_quorum(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MixedQuorum]:
    """Three real Kafka controllers; idle NoOp records off so the high watermark holds still between reads."""
    classpath()
    yield from _quorum(
        tmp_path_factory,
        "kafka3",
        ["kafka"] * 3,
        bootstrap="kip853",
        extra={"metadata.max.idle.interval.ms": "0"},
    )
