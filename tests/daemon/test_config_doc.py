"""docs/CONFIG.md lists exactly the keys kraftd/config.py knows, with the defaults the code applies."""

from __future__ import annotations

import re
from pathlib import Path

from kraftd import config as cfgmod
from kraftd.config import config_from_properties

DOC = (Path(__file__).resolve().parents[2] / "docs" / "CONFIG.md").read_text()
ROWS = {
    m.group(1): m.group(2).strip() for m in re.finditer(r"^\| `([a-z.]+)` \| ([^|]+) \|", DOC, re.MULTILINE)
}
MINIMAL = {
    "node.id": "1",
    "process.roles": "controller",
    "controller.listener.names": "CONTROLLER",
    "listeners": "CONTROLLER://127.0.0.1:9093",
    "controller.quorum.voters": "1@127.0.0.1:9093",
}
NUMERIC = {
    "controller.quorum.election.timeout.ms": "election_timeout_ms",
    "controller.quorum.fetch.timeout.ms": "fetch_timeout_ms",
    "controller.quorum.election.backoff.max.ms": "election_backoff_max_ms",
    "controller.quorum.request.timeout.ms": "request_timeout_ms",
    "controller.quorum.retry.backoff.ms": "retry_backoff_ms",
    "controller.quorum.append.linger.ms": "append_linger_ms",
    "metadata.log.segment.bytes": "segment_bytes",
    "metrics.port": "metrics_port",
    "metadata.max.retention.bytes": "retention_bytes",
    "metadata.max.retention.ms": "retention_ms",
    "metadata.log.max.snapshot.interval.ms": "snapshot_interval_ms",
    "metadata.max.idle.interval.ms": "max_idle_interval_ms",
    "broker.session.timeout.ms": "broker_session_timeout_ms",
    "metadata.log.max.record.bytes.between.snapshots": "snapshot_max_record_bytes",
}


def test_every_known_key_is_documented_and_nothing_else() -> None:
    assert set(ROWS) == set(cfgmod._KNOWN)


def test_documented_numeric_defaults_are_the_codes() -> None:
    parsed = config_from_properties(MINIMAL)
    assert set(NUMERIC) <= set(ROWS)
    for key, attr in NUMERIC.items():
        assert ROWS[key] == f"`{getattr(parsed, attr)}`", key


def test_documented_string_defaults_are_the_codes() -> None:
    assert ROWS["listeners"] == f"`{cfgmod.DEFAULT_LISTENERS}`"
    assert ROWS["log.dir"] == f"`{cfgmod.DEFAULT_LOG_DIR}`"
    no_dirs = config_from_properties({k: v for k, v in MINIMAL.items()})
    assert str(no_dirs.metadata_log_dir) == cfgmod.DEFAULT_LOG_DIR and no_dirs.log_dirs == ()
    listeners = config_from_properties({**MINIMAL, "listeners": "CONTROLLER://127.0.0.1:9093"})
    assert listeners.advertised_listeners == ()  # unset: peers are told the bound listeners


def test_tolerated_keys_are_listed() -> None:
    block = DOC.split("<!-- tolerated -->")[1].split("<!-- /tolerated -->")[0]
    assert set(re.findall(r"`([a-z.]+)`", block)) == set(cfgmod._TOLERATED)
