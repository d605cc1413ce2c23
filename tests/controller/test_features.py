"""Feature resolution for ``kraft-storage format`` (kraftd.controller.features), without the JVM.

Expected values are what Kafka 4.3.1's StorageTool printed for the same flags (the interop test
tests/interop/test_bootstrap_metadata.py compares the files themselves)."""

from __future__ import annotations

import pytest

from kraftd.controller.features import (
    FeatureError,
    bootstrap_feature_records,
    parse_feature_flags,
    parse_release_version,
    resolve_features,
)


def _records(release: str | None, flags: list[str]) -> list[tuple[str, int]]:
    levels = resolve_features(release, parse_feature_flags(flags))
    return [(r.name, r.feature_level) for r in bootstrap_feature_records(levels)]


def test_default_is_4_3_with_every_feature() -> None:
    assert _records(None, []) == [
        ("metadata.version", 30),
        ("eligible.leader.replicas.version", 1),
        ("group.version", 1),
        ("share.version", 1),
        ("streams.version", 1),
        ("transaction.version", 2),
    ]


def test_release_names_pick_the_newest_iv() -> None:
    assert parse_release_version("4.0") == 25
    assert parse_release_version("4.0-IV1") == 23
    assert parse_release_version("3.3") == 7
    assert _records("4.0", []) == [("metadata.version", 25), ("group.version", 1), ("transaction.version", 2)]
    assert _records("3.9", []) == [("metadata.version", 21)]


def test_overrides_and_zero_levels() -> None:
    assert _records("3.9", ["transaction.version=2"]) == [
        ("metadata.version", 21),
        ("transaction.version", 2),
    ]
    assert ("group.version", 1) not in _records(None, ["group.version=1", "group.version=0"])
    assert _records(None, ["metadata.version=25"])[0] == ("metadata.version", 25)


@pytest.mark.parametrize(
    ("release", "flags", "message"),
    [
        ("3.2", [], "Unknown metadata.version '3.2'. Supported metadata.version are: 3.3-IV3, "),
        ("4.4", [], "Unknown metadata.version '4.4'."),
        (None, ["foo.version=1"], "Unsupported feature: foo.version. Supported features are: eligible"),
        (None, ["group.version=5"], "No feature:group.version with feature level 5"),
        (None, ["group.version"], "Can't parse feature=level string group.version: equals sign not found."),
        (None, ["group.version=x"], "unable to parse x as a short."),
        ("4.0-IV0", ["eligible.leader.replicas.version=1"], "depends on metadata.version level 23"),
        ("4.0", ["metadata.version=25"], "Use --release-version instead of --feature metadata.version=X"),
    ],
)
def test_errors_are_kafkas_one_liners(release: str | None, flags: list[str], message: str) -> None:
    with pytest.raises(FeatureError) as info:
        resolve_features(release, parse_feature_flags(flags))
    assert message in str(info.value) and "\n" not in str(info.value)


def test_record_versions_follow_metadata_version() -> None:
    # Points printed from Kafka 4.3.1's MetadataVersion (registerBrokerRecordVersion, partitionRecordVersion, ...).
    from kraftd.controller.features import record_version

    assert [record_version(0, mv) for mv in (7, 8, 16, 17, 29, 30)] == [1, 2, 2, 3, 3, 4]
    assert [record_version(3, mv) for mv in (16, 17, 22, 23, 30)] == [0, 1, 1, 2, 2]
    assert [record_version(5, mv) for mv in (16, 17, 22, 23, 30)] == [0, 1, 1, 2, 2]
    assert record_version(12, 30) == 0


def test_controller_encodes_for_the_bootstrap_metadata_version() -> None:
    from generated.partition_record import PartitionRecord
    from kraftd.controller.machine import MetadataController
    from kwire.metadata_frame import decode_metadata_frame, encode_record

    levels = resolve_features("3.9", {})
    machine = MetadataController(1, [encode_record(r, 0) for r in bootstrap_feature_records(levels)])
    (value,) = machine.encode([PartitionRecord(partition_id=0, replicas=[1], isr=[1], leader=1)])
    assert decode_metadata_frame(value)[:2] == (3, 1)  # PartitionRecord v1 at metadata.version 3.9-IV0
