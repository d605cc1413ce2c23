"""The short fuzz run for CI (seconds): corpus replay, hypothesis over every target, declared-length probes.

The long run is scripts/fuzz.sh --minutes N (atheris). Every crash either run found is pinned below as a
regression test.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kraftd.storage.errors import MalformedFileError
from kraftd.storage.quorum_state import QuorumStateFile
from kwire.errors import KraftError
from tests.fuzz.run import mutate, seeds
from tests.fuzz.targets import DECLARED_LENGTH_PROBES, TARGETS, bounded_peak

NAMES = sorted(TARGETS)
FAST = [
    n
    for n in NAMES
    if n not in {"quorum_state", "meta_properties", "bootstrap_checkpoint", "segment_recovery"}
]


def run(name: str, data: bytes) -> None:
    try:
        TARGETS[name](data)
    except KraftError:
        pass


@pytest.mark.parametrize("name", NAMES)
def test_corpus_replays_with_only_typed_errors(name: str) -> None:
    pool = seeds(name)
    assert pool, f"tests/fuzz/corpus/{name} is empty (run python -m tests.fuzz.capture)"
    for data in pool:
        run(name, data)


def test_corpus_holds_real_kafka_and_kraftd_captures() -> None:
    root = Path(__file__).parent / "corpus"
    tags = {p.name.split("-", 1)[0] for p in root.glob("*/*")}
    assert {"kafka", "kraftd"} <= tags
    kafka_requests = {p.name.split("-")[1] for p in (root / "request").glob("kafka-*")}
    assert {"Vote", "Fetch"} <= kafka_requests


@pytest.mark.parametrize("name", FAST)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_seeds_raise_only_typed_errors(name: str, data: st.DataObject) -> None:
    pool = seeds(name)
    rnd = data.draw(st.randoms(use_true_random=False))
    base = data.draw(st.sampled_from(pool))
    run(name, mutate(rnd, base))


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(blob=st.binary(max_size=512))
def test_random_bytes_raise_only_typed_errors(name: str, blob: bytes) -> None:
    run(name, blob)


@pytest.mark.parametrize("name", sorted(DECLARED_LENGTH_PROBES))
def test_declared_length_never_allocates_before_the_bytes_arrive(name: str) -> None:
    # Each probe declares ~2 GB (or 2**31 entries) and carries a handful of bytes.
    peak = bounded_peak(TARGETS[name], DECLARED_LENGTH_PROBES[name])
    assert peak < 256 * 1024, (
        f"{name} allocated {peak} bytes for a {len(DECLARED_LENGTH_PROBES[name])}-byte input"
    )


# ---- regressions found by the fuzzers ----------------------------------------------------------------------


def test_quorum_state_that_is_not_utf8_is_a_malformed_file(tmp_path: Path) -> None:
    (tmp_path / "quorum-state").write_bytes(b'{"data_version":\x86 1}\n')
    with pytest.raises(MalformedFileError, match="not UTF-8"):
        QuorumStateFile(tmp_path).read()


def test_quorum_state_nested_past_the_recursion_limit_is_a_malformed_file(tmp_path: Path) -> None:
    (tmp_path / "quorum-state").write_text("[" * 100_000 + "\n")
    with pytest.raises(MalformedFileError, match="not JSON"):
        QuorumStateFile(tmp_path).read()


def test_quorum_state_round_trip_still_reads(tmp_path: Path) -> None:
    (tmp_path / "quorum-state").write_text(
        json.dumps({"leaderId": 2, "leaderEpoch": 5, "votedId": -1, "data_version": 1}) + "\n"
    )
    state = QuorumStateFile(tmp_path).read()
    assert state is not None and state.leader_epoch == 5 and state.leader_id == 2
