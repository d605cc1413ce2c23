"""A real Prometheus (Debian's ``prometheus`` package; scripts/setup.sh installs it where apt is usable as root)
run by the tests with its own config, data directory and free port, never its system service.

Contracts:
1. Without the binaries a test skips with one line, except under ``CI=true``, where it fails.
2. :class:`Prometheus` never leaves its process running after ``stop`` (or the ``with`` block) returns; it is
   only ever signalled by its own pid.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "ops" / "prometheus" / "kraftd-rules.yml"
RULE_TESTS = ROOT / "ops" / "prometheus" / "tests"
DASHBOARD = ROOT / "ops" / "grafana" / "kraftd.json"
CI = os.environ.get("CI", "").lower() == "true"


def binary(name: str) -> str:
    """``prometheus`` or ``promtool`` (contract 1)."""
    found = shutil.which(name) or next((p for p in (f"/usr/bin/{name}",) if os.access(p, os.X_OK)), None)
    if found is None:
        reason = (
            f"{name} is not installed (Debian: apt-get install prometheus; scripts/setup.sh does it as root)"
        )
        if CI:
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    return found


def dashboard_queries(job: str) -> list[tuple[str, str]]:
    """(panel title, PromQL) of every target of the Grafana dashboard, with ``$job`` set."""
    dash = json.loads(DASHBOARD.read_text())
    return [
        (p["title"], t["expr"].replace("$job", job)) for p in dash["panels"] for t in p.get("targets", [])
    ]


class Prometheus:
    def __init__(self, root: Path, port: int, targets: list[str], job: str = "kraftd") -> None:
        self.root = root
        self.port = port
        root.mkdir(parents=True, exist_ok=True)
        quoted = ", ".join(f"'{t}'" for t in targets)
        (root / "prometheus.yml").write_text(
            "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
            f"rule_files: ['{RULES}']\n"
            "scrape_configs:\n"
            f"  - job_name: {job}\n"
            f"    static_configs: [{{targets: [{quoted}]}}]\n"
        )
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.log = open(self.root / "prometheus.log", "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [
                binary("prometheus"),
                f"--config.file={self.root / 'prometheus.yml'}",
                f"--storage.tsdb.path={self.root / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--storage.tsdb.retention.time=1h",
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            cwd=self.root,
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/-/ready", timeout=2).read()
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"prometheus did not start:\n{self.tail()}") from None
                time.sleep(0.2)

    def tail(self) -> str:
        return (self.root / "prometheus.log").read_text(errors="replace")[-3000:]

    def api(self, path: str, **params: str) -> Any:
        url = f"http://127.0.0.1:{self.port}/api/v1/{path}"
        if params:
            url += "?" + urllib.parse.urlencode(params)
        body = json.loads(urllib.request.urlopen(url, timeout=10).read())
        assert body["status"] == "success", body
        return body["data"]

    def query(self, promql: str) -> list[dict[str, Any]]:
        data = self.api("query", query=promql)
        result: list[dict[str, Any]] = data["result"]
        return result

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        if self.proc is not None:
            self.log.close()
        self.proc = None

    def __enter__(self) -> Prometheus:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
