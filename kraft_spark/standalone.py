"""A Spark standalone cluster on loopback from pyspark's own launcher: one master and N workers, each its own
process (``spark-class org.apache.spark.deploy.master.Master`` / ``...worker.Worker``), for tests and benchmarks.

Contracts:
1. Every process binds 127.0.0.1 on free ports; daemons run with a small heap; workers offer ``cores`` cores
   and ``memory`` each, and keep their work directories and logs under ``root``.
2. :meth:`StandaloneCluster.start` returns once the master's status page lists every worker ALIVE (or raises
   with the end of the daemons' logs); :meth:`stop` ends every process it started (SIGTERM, then SIGKILL) and
   is safe to call twice. ``with StandaloneCluster(...) as c:`` does both.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from types import TracebackType


def _free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


class StandaloneCluster:
    def __init__(self, root: Path, workers: int = 2, *, cores: int = 1, memory: str = "1g") -> None:
        self.root = root
        self.workers, self.cores, self.memory = workers, cores, memory
        self.procs: list[subprocess.Popen[bytes]] = []
        self.port, self.ui_port = _free_ports(2)
        self.url = f"spark://127.0.0.1:{self.port}"

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            SPARK_HOME=str(spark_home()),
            SPARK_LOCAL_IP="127.0.0.1",
            SPARK_DAEMON_MEMORY="256m",
            SPARK_LOG_DIR=str(self.root / "logs"),
            PYSPARK_PYTHON=sys.executable,
        )
        return env

    def _launch(self, name: str, args: list[str]) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        cmd = [str(spark_home() / "bin" / "spark-class"), *args]
        with (self.root / f"{name}.out").open("ab") as out:
            proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=self._env(), cwd=self.root)
        self.procs.append(proc)

    def status(self) -> dict[str, object]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=5) as resp:
            result: dict[str, object] = json.loads(resp.read())
        return result

    def alive_workers(self) -> int:
        """Workers the master lists ALIVE; -1 while its status page does not answer."""
        try:
            workers = self.status().get("workers", [])
        except OSError:
            return -1
        if not isinstance(workers, list):
            return 0
        return sum(1 for w in workers if isinstance(w, dict) and w.get("state") == "ALIVE")

    def start(self, timeout: float = 120) -> StandaloneCluster:
        master = "org.apache.spark.deploy.master.Master"
        self._launch(
            "master",
            [master, "--host", "127.0.0.1", "--port", str(self.port)] + ["--webui-port", str(self.ui_port)],
        )
        self._wait(lambda: self.alive_workers() >= 0, "the master", timeout)
        for i in range(self.workers):
            port, ui = _free_ports(2)
            work = self.root / f"worker-{i + 1}"
            args = ["org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--port", str(port)]
            args += ["--webui-port", str(ui), "--cores", str(self.cores), "--memory", self.memory]
            self._launch(f"worker-{i + 1}", [*args, "--work-dir", str(work), self.url])
        self._wait(lambda: self.alive_workers() == self.workers, f"{self.workers} workers", timeout)
        return self

    def _wait(self, ready: object, what: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if callable(ready) and ready():
                return
            dead = [p for p in self.procs if p.poll() is not None]
            if dead:
                break
            time.sleep(0.5)
        tails = [p.read_text(errors="replace")[-1500:] for p in sorted(self.root.glob("*.out"))]
        self.stop()
        raise RuntimeError(f"Spark standalone: {what} not up within {timeout}s\n" + "\n".join(tails))

    def stop(self) -> None:
        for proc in self.procs[::-1]:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs[::-1]:
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        self.procs = []

    def __enter__(self) -> StandaloneCluster:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
