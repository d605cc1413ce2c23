"""Finalized features: metadata.version levels, the other production features, and bootstrap defaults.

Facts as Kafka 4.3.1 ships them (org.apache.kafka.server.common.MetadataVersion and Feature, read from the
kafka-server-common 4.3.1 jar; the table below was printed from those classes):

1. metadata.version levels 7 (3.3-IV3) .. 30 (4.3-IV0) are production; 31 (4.4-IV0) is unstable and refused.
   A release name without "-IV" ("4.0") names the newest level of that release (4.0-IV3).
2. Every other production feature has a default level per metadata.version: the highest level whose
   bootstrap metadata.version is at or below it. A level may depend on a minimum metadata.version
   (eligible.leader.replicas.version 1 needs metadata.version 23).
3. The bootstrap records are one FeatureLevelRecord for metadata.version, then one per other feature with a
   level above 0 in name order (kraft.version is never a FeatureLevelRecord: it lives in control records).
4. Every operator error is a :class:`FeatureError` with Kafka's one-line wording.
5. The version a record is written at depends on metadata.version (:func:`record_version`, printed from Kafka
   4.3.1's MetadataVersion): RegisterBrokerRecord 1 / 2 (3.4-IV0) / 3 (3.7-IV2, directories) / 4 (4.3-IV0,
   cordoned directories); PartitionRecord and PartitionChangeRecord 0 / 1 (3.7-IV2) / 2 (4.0-IV1, ELR);
   BrokerRegistrationChangeRecord 1 / 2 (3.7-IV2) / 3 (4.3-IV0); every other type 0. Controller registration
   needs 3.7-IV0 (level 15).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from generated.feature_level_record import FeatureLevelRecord
from kwire.errors import KraftError

METADATA_VERSION = "metadata.version"
KRAFT_VERSION = "kraft.version"
ELR_VERSION = "eligible.leader.replicas.version"

# (level, name) of every production metadata.version, oldest first (fact 1).
METADATA_VERSIONS: tuple[tuple[int, str], ...] = (
    (7, "3.3-IV3"),
    (8, "3.4-IV0"),
    (9, "3.5-IV0"),
    (10, "3.5-IV1"),
    (11, "3.5-IV2"),
    (12, "3.6-IV0"),
    (13, "3.6-IV1"),
    (14, "3.6-IV2"),
    (15, "3.7-IV0"),
    (16, "3.7-IV1"),
    (17, "3.7-IV2"),
    (18, "3.7-IV3"),
    (19, "3.7-IV4"),
    (20, "3.8-IV0"),
    (21, "3.9-IV0"),
    (22, "4.0-IV0"),
    (23, "4.0-IV1"),
    (24, "4.0-IV2"),
    (25, "4.0-IV3"),
    (26, "4.1-IV0"),
    (27, "4.1-IV1"),
    (28, "4.2-IV0"),
    (29, "4.2-IV1"),
    (30, "4.3-IV0"),
)
MV_MIN = METADATA_VERSIONS[0][0]
MV_LATEST = METADATA_VERSIONS[-1][0]
# metadata.version 3.6-IV1 (13) introduced Begin/EndTransactionRecord (KIP-868).
MV_METADATA_TRANSACTIONS = 13
MV_NOOP_RECORDS = 5  # 3.3-IV1 introduced NoOpRecord (below every production level; checked all the same)
MV_CONTROLLER_REGISTRATION = 15  # 3.7-IV0
MV_DIRECTORIES = 17  # 3.7-IV2
MV_ELR = 23  # 4.0-IV1
MV_CORDONED = 30  # 4.3-IV0


def record_version(api_key: int, mv: int) -> int:
    """Contract 5: the version Kafka writes record type ``api_key`` at under metadata.version ``mv``."""
    if api_key == 0:  # RegisterBrokerRecord
        return 4 if mv >= MV_CORDONED else 3 if mv >= MV_DIRECTORIES else 2 if mv >= 8 else 1
    if api_key in (3, 5):  # PartitionRecord, PartitionChangeRecord
        return 2 if mv >= MV_ELR else 1 if mv >= MV_DIRECTORIES else 0
    if api_key == 17:  # BrokerRegistrationChangeRecord
        return 3 if mv >= MV_CORDONED else 2 if mv >= MV_DIRECTORIES else 1
    return 0


@dataclass(frozen=True, slots=True)
class FeatureLevel:
    level: int
    bootstrap_mv: int  # lowest metadata.version whose default is at least this level (fact 2)
    needs_mv: int = 0  # minimum metadata.version this level depends on


# Production features other than metadata.version (fact 2).
FEATURES: dict[str, tuple[FeatureLevel, ...]] = {
    ELR_VERSION: (FeatureLevel(0, 7), FeatureLevel(1, 26, needs_mv=23)),
    "group.version": (FeatureLevel(0, 7), FeatureLevel(1, 22)),
    KRAFT_VERSION: (FeatureLevel(0, 7), FeatureLevel(1, 21)),
    "share.version": (FeatureLevel(0, 7), FeatureLevel(1, 28)),
    "streams.version": (FeatureLevel(0, 7), FeatureLevel(1, 29)),
    "transaction.version": (FeatureLevel(0, 7), FeatureLevel(1, 24), FeatureLevel(2, 24)),
}


class FeatureError(KraftError):
    """A release version or feature setting an operator gave is not acceptable (fact 4)."""


def mv_name(level: int) -> str:
    for lvl, name in METADATA_VERSIONS:
        if lvl == level:
            return name
    raise FeatureError(f"Unknown metadata.version feature level {level}")


def parse_release_version(text: str) -> int:
    """metadata.version level of ``text`` ("4.0" or "4.0-IV1"), fact 1."""
    exact = [lvl for lvl, name in METADATA_VERSIONS if name == text]
    by_release = [lvl for lvl, name in METADATA_VERSIONS if name.split("-")[0] == text]
    if exact or by_release:
        return (exact or by_release)[-1]
    names = ", ".join(name for _, name in METADATA_VERSIONS)
    raise FeatureError(f"Unknown metadata.version '{text}'. Supported metadata.version are: {names}")


def default_level(feature: str, mv: int) -> int:
    return max(f.level for f in FEATURES[feature] if f.bootstrap_mv <= mv)


def max_level(feature: str) -> int:
    if feature == METADATA_VERSION:
        return MV_LATEST
    return FEATURES[feature][-1].level


def min_level(feature: str) -> int:
    return MV_MIN if feature == METADATA_VERSION else 0


def parse_feature_flags(flags: Sequence[str]) -> dict[str, int]:
    """``name=level`` strings to a dict (later flags win, as Kafka's map does)."""
    out: dict[str, int] = {}
    for flag in flags:
        name, eq, level_text = flag.partition("=")
        if not eq:
            raise FeatureError(f"Can't parse feature=level string {flag}: equals sign not found.")
        try:
            level = int(level_text.strip())
            if not -32768 <= level <= 32767:
                raise ValueError(level_text)
        except ValueError:
            raise FeatureError(
                f"Can't parse feature=level string {flag}: unable to parse {level_text} as a short."
            ) from None
        out[name.strip()] = level
    return out


def resolve_features(release_version: str | None, overrides: Mapping[str, int]) -> dict[str, int]:
    """The finalized levels a format writes: metadata.version plus every other production feature
    (kraft.version included; the caller decides where that one goes). Facts 1, 2 and 4."""
    if METADATA_VERSION in overrides and release_version is not None:
        raise FeatureError(
            "Use --release-version instead of --feature metadata.version=X to avoid ambiguity."
        )
    if METADATA_VERSION in overrides:
        mv = overrides[METADATA_VERSION]
        mv_name(mv)
    else:
        mv = parse_release_version(release_version) if release_version is not None else MV_LATEST
    levels: dict[str, int] = {METADATA_VERSION: mv}
    for name in overrides:
        if name != METADATA_VERSION and name not in FEATURES:
            supported = ", ".join(sorted(FEATURES))
            raise FeatureError(f"Unsupported feature: {name}. Supported features are: {supported}")
    for name in sorted(FEATURES):
        level = overrides.get(name, default_level(name, mv))
        found = [f for f in FEATURES[name] if f.level == level]
        if not found:
            raise FeatureError(f"No feature:{name} with feature level {level}")
        if found[0].needs_mv > mv:
            raise FeatureError(
                f"{name} could not be set to {level} because it depends on metadata.version level "
                f"{found[0].needs_mv}"
            )
        levels[name] = level
    return levels


def bootstrap_feature_records(levels: Mapping[str, int]) -> list[FeatureLevelRecord]:
    """Fact 3: metadata.version first, then the other non-zero features by name; never kraft.version."""
    records = [FeatureLevelRecord(name=METADATA_VERSION, feature_level=levels[METADATA_VERSION])]
    for name in sorted(levels):
        if name not in (METADATA_VERSION, KRAFT_VERSION) and levels[name] > 0:
            records.append(FeatureLevelRecord(name=name, feature_level=levels[name]))
    return records


def supported_ranges() -> dict[str, tuple[int, int]]:
    """The (min, max) levels this controller can run, for RegisterControllerRecord and ApiVersions."""
    ranges = {name: (0, max_level(name)) for name in FEATURES}
    ranges[METADATA_VERSION] = (MV_MIN, MV_LATEST)
    return ranges
