"""Shared real-process quorums for the interop tests (JVM start-up is seconds: share where state allows)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.interop import running_quorum as _quorum
from tests.interop.kafka import CREATED, ROOT, MixedQuorum, classpath

KEPT_LOGS = ROOT / ".cache" / "interop-logs"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """On a failure, copy the logs of every quorum the test touched to .cache/interop-logs/<test>/ and print
    their tails in the report."""
    outcome = yield
    report = outcome.get_result()
    if not report.failed:
        return
    used = [q for q in CREATED if any(isinstance(v, MixedQuorum) and v is q for v in item.funcargs.values())]
    used += [
        q for q in CREATED if q.root.is_relative_to(Path(str(item.funcargs.get("tmp_path", "/nonexistent"))))
    ]
    if not used:
        return
    dest = KEPT_LOGS / item.name.replace("/", "_")
    for q in dict.fromkeys(used):
        shutil.copytree(
            q.root, dest / q.root.name, dirs_exist_ok=True, ignore=shutil.ignore_patterns("*.jar")
        )
        report.sections.append((f"logs of {q.root.name} (kept in {dest})", q.tails(2500)))


@pytest.fixture(scope="module")
def kraftd_quorum(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MixedQuorum]:
    """Three kraftd controllers (KIP-853 bootstrap, so directory ids are known to everyone); idle NoOp records off,
    as for the Kafka quorum, so the high watermark holds still between reads."""
    classpath()  # the Kafka tools run against it: skip or fail first, before any process starts
    yield from _quorum(
        tmp_path_factory,
        "kraftd3",
        ["kraftd"] * 3,
        bootstrap="kip853",
        extra={"metadata.max.idle.interval.ms": "0"},
    )


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
