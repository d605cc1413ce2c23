"""Seed the fuzz corpora from real traffic: ``python -m tests.fuzz.capture --kind kraftd|kafka [--seconds N]``.

A 3-controller quorum of the given kind (real processes on loopback; ``kafka`` runs Apache Kafka's own
controller from the interop harness) runs with every peer-to-peer link routed through a recording proxy
(tests.chaos.proxy), and a client link in front of node 1 carries DescribeQuorum/DescribeCluster/ApiVersions.
Each forwarded frame is filed under tests/fuzz/corpus/<target>/:

- ``request``: request frames as sent; ``frame_decoder``: the step byte then the size-prefixed frame;
- ``message``: every response body as ``<class name> NUL <version - lowest> <body>``, every request body too;
- ``record_batch`` / ``batch_stream``: record batches from Fetch responses and the head of each node's segment;
- disk targets: each node's quorum-state, leader-epoch-checkpoint, meta.properties, bootstrap.checkpoint and its
  server.properties.

At most ``--per-key`` files per (target, api, version); file names are content hashes, so reruns only add.
Private keys never appear here: the captured quorum runs PLAINTEXT.
"""

from __future__ import annotations

import asyncio
import hashlib
import struct
import tempfile
import time
from collections import Counter
from pathlib import Path

import click

from generated.messages import API_SPECS
from kraftd.storage.segment import segment_name
from kwire.errors import KraftError
from kwire.headers import decode_response, parse_request
from kwire.quorum_client import fetch_quorum
from tests.chaos.proxy import Proxy
from tests.interop.kafka import MixedQuorum, Node

CORPUS = Path(__file__).resolve().parent / "corpus"
_ALL = {k: (s.lowest_version, s.highest_version) for k, s in API_SPECS.items()}


class Corpus:
    def __init__(self, root: Path, tag: str, per_key: int) -> None:
        self.root, self.tag, self.per_key = root, tag, per_key
        self.counts: Counter[tuple[str, str]] = Counter()
        self.written = Counter[str]()

    def add(self, target: str, key: str, data: bytes) -> None:
        if self.counts[(target, key)] >= self.per_key:
            return
        self.counts[(target, key)] += 1
        d = self.root / target
        d.mkdir(parents=True, exist_ok=True)
        path = d / f"{self.tag}-{key}-{hashlib.sha1(data).hexdigest()[:12]}"
        if not path.exists():
            path.write_bytes(data)
            self.written[target] += 1


def message_seed(cls: type, version: int, body: bytes) -> bytes:
    lo: int = cls.LOWEST_VERSION  # type: ignore[attr-defined]
    return cls.__name__.encode() + b"\0" + bytes([version - lo]) + body


class Recorder:
    """Pairs each response with its request by correlation id (per proxied connection direction)."""

    def __init__(self, corpus: Corpus) -> None:
        self.corpus = corpus
        self.asked: dict[int, tuple[int, int]] = {}

    def __call__(self, direction: str, frame: bytes) -> None:
        c = self.corpus
        if direction == "up":
            try:
                req = parse_request(frame, _ALL)
            except KraftError:
                return
            key = f"{req.spec.name}-v{req.api_version}"
            c.add("request", key, frame)
            c.add("frame_decoder", key, bytes([len(frame) % 7]) + struct.pack(">i", len(frame)) + frame)
            body = req.body.encode(req.api_version)
            c.add("message", key, message_seed(req.spec.request, req.api_version, body))
            self.asked[req.header.correlation_id] = (req.api_key, req.api_version)
            return
        cid = int.from_bytes(frame[:4], "big", signed=True)
        asked = self.asked.pop(cid, None)
        if asked is None:
            return
        api_key, version = asked
        spec = API_SPECS[api_key]
        try:
            _, resp = decode_response(frame, api_key, version)
        except KraftError:
            return
        key = f"{spec.name}Response-v{version}"
        c.add("message", key, message_seed(spec.response, version, resp.encode(version)))
        if api_key == 1:
            for topic in resp.responses:
                for part in topic.partitions:
                    if part.records:
                        c.add("batch_stream", "fetch", bytes(part.records[:4096]))
                        _first_batch(c, bytes(part.records))


def _first_batch(c: Corpus, data: bytes) -> None:
    if len(data) >= 12:
        n = 12 + int.from_bytes(data[8:12], "big", signed=True)
        if 12 <= n <= len(data):
            c.add("record_batch", "fetch", data[:n])


class RoutedQuorum(MixedQuorum):
    """Every node reaches every peer through its own proxy link (i -> j)."""

    proxy_ports: dict[tuple[int, int], int]

    def properties(self, node: Node) -> dict[str, str]:
        props = super().properties(node)
        ports = getattr(self, "proxy_ports", {})
        props["controller.quorum.voters"] = ",".join(
            f"{n.node_id}@127.0.0.1:{n.port if n is node else ports.get((node.node_id, n.node_id), n.port)}"
            for n in self.nodes
        )
        return props


def capture(kind: str, seconds: float, per_key: int) -> Counter[str]:
    corpus = Corpus(CORPUS, kind, per_key)
    proxy = Proxy()
    with tempfile.TemporaryDirectory(prefix=f"kraftd-capture-{kind}-") as tmp:
        q = RoutedQuorum(Path(tmp), [kind] * 3)
        q.proxy_ports = {}
        for a in q.nodes:
            for b in q.nodes:
                if a is not b:
                    q.proxy_ports[(a.node_id, b.node_id)] = proxy.add(
                        (a.node_id, b.node_id), ("127.0.0.1", b.port), Recorder(corpus)
                    )
        for n in q.nodes:
            q.write_config(n)
        front = proxy.add("client", ("127.0.0.1", q.nodes[0].port), Recorder(corpus))
        try:
            q.start_all()
            q.wait_leader(90)
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline:
                asyncio.run(fetch_quorum([("127.0.0.1", front)], 2, 3000))
                time.sleep(0.5)
            leader = q.wait_leader(30).leader_id
            q.node(leader).stop()  # a failover: Vote and BeginQuorumEpoch traffic
            q.wait_leader(60, exclude=leader)
            q.node(leader).start()
            time.sleep(3)
        finally:
            q.stop_all()
            proxy.close()
        for n in q.nodes:
            _disk(corpus, n)
    return corpus.written


def _disk(c: Corpus, n: Node) -> None:
    md = n.metadata_dir
    for name, target in (
        ("quorum-state", "quorum_state"),
        ("leader-epoch-checkpoint", "epoch_checkpoint"),
    ):
        if (md / name).exists():
            c.add(target, "file", (md / name).read_bytes())
    if (n.data_dir / "meta.properties").exists():
        c.add("meta_properties", "file", (n.data_dir / "meta.properties").read_bytes())
    if (n.data_dir / "bootstrap.checkpoint").exists():
        c.add("bootstrap_checkpoint", "file", (n.data_dir / "bootstrap.checkpoint").read_bytes())
    c.add("server_properties", "file", n.config.read_bytes())
    seg = md / segment_name(0)
    if seg.exists():
        data = seg.read_bytes()
        c.add("segment_recovery", "file", data[:8192])
        c.add("batch_stream", "segment", data[:8192])
        _first_batch(c, data)
        # Metadata records: the values of the first data batch's records.
        from kwire.batches import iter_batches

        try:
            for view in iter_batches(data[:65536]):
                batch = view.decode()
                if not batch.is_control:
                    for rec in batch.records[:8]:
                        if rec.value:
                            c.add("metadata_record", "segment", bytes(rec.value))
                    c.add("record_batch", "data", bytes(view.data))
        except KraftError:
            pass


@click.command()
@click.option("--kind", type=click.Choice(["kraftd", "kafka"]), required=True)
@click.option("--seconds", default=5.0, show_default=True)
@click.option("--per-key", default=3, show_default=True)
def main(kind: str, seconds: float, per_key: int) -> None:
    written = capture(kind, seconds, per_key)
    click.echo(f"capture {kind}: " + ", ".join(f"{t}={n}" for t, n in sorted(written.items())))


if __name__ == "__main__":
    main()
