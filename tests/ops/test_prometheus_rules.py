"""ops/prometheus/kraftd-rules.yml passes ``promtool check rules`` and its unit tests (``promtool test rules``,
ops/prometheus/tests/); the Grafana dashboard ops/grafana/kraftd.json is a dashboard whose every panel queries
Prometheus (its PromQL is evaluated by a real Prometheus in tests/interop/test_prometheus.py)."""

from __future__ import annotations

import json
import subprocess

from tests.ops.prom import DASHBOARD, RULE_TESTS, RULES, binary


def test_rules_are_valid() -> None:
    out = subprocess.run([binary("promtool"), "check", "rules", str(RULES)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "SUCCESS" in out.stdout


def test_rule_unit_tests_pass() -> None:
    files = sorted(RULE_TESTS.glob("*.yml"))
    assert files
    out = subprocess.run(
        [binary("promtool"), "test", "rules", *map(str, files)],
        capture_output=True,
        text=True,
        cwd=RULE_TESTS,
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_every_alert_the_issue_asks_for_is_shipped_and_tested() -> None:
    text = RULES.read_text()
    tests = "".join(f.read_text() for f in RULE_TESTS.glob("*.yml"))
    for alert in (
        "KraftdNoActiveController",
        "KraftdMultipleActiveControllers",
        "KraftdFrequentLeaderChanges",
        "KraftdHighWatermarkNotAdvancing",
        "KraftdFetchLag",
        "KraftdFencedBrokers",
        "KraftdOfflinePartitions",
        "KraftdMetadataErrors",
    ):
        assert f"alert: {alert}" in text
        assert f"alertname: {alert}\n        exp_alerts:" in tests, f"{alert}: no test where it fires"


def test_dashboard_panels_all_query_prometheus() -> None:
    dash = json.loads(DASHBOARD.read_text())
    assert dash["panels"]
    for panel in dash["panels"]:
        assert panel["targets"], panel["title"]
        for t in panel["targets"]:
            assert t["expr"].strip(), panel["title"]
            assert t["datasource"]["type"] == "prometheus"
