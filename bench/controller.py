"""Controller throughput through a real Kafka 4.3.1 broker: kraftd controllers vs Kafka controllers.

Usage: .venv/bin/python bench/controller.py [--topics N] [--partitions P] [--controllers C] [--json]

For each kind of controller quorum (C voters, default 3, all kraftd or all Kafka 4.3.1 ``process.roles=controller``)
one real Kafka 4.3.1 broker (``kraftd.testing.brokers.broker_node``) registers and is
unfenced; then, through the broker, a confluent-kafka AdminClient:
1. warms up (20 topics created and altered, not timed: JIT, connections);
2. creates N topics (default 1,000) of P partitions (default 6), RF 1, one CreateTopics request per topic, every
   request in flight at once; the time runs until the last answer (the broker answers after the controller
   committed the topic). Every answer must be a success and the broker's metadata must then list every topic
   with P partitions;
3. alters each topic's ``retention.ms`` with one IncrementalAlterConfigs request per topic (N requests, all in flight),
   twice; every answer must be a success.
The broker forwards both RPCs to the active controller (Envelope), so the rate is the controller's commit path plus
the same broker and client in both runs. Printed: ops/s of each kind and the ratio kraftd / Kafka (> 1: kraftd
faster). Every JVM (broker and Kafka controllers) runs with bench/kafka_raft.py's server flags. The broker forwards
one request at a time, so with one topic per request the rate is bounded by the controller's commit latency,
including ``controller.quorum.append.linger.ms`` (``--linger-ms``, Kafka's default 25 on both kinds).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from kafka_raft import JVM_FLAGS  # noqa: E402

from kraftd.testing.brokers import broker_node, wait_log  # noqa: E402
from kraftd.testing.quorum import MixedQuorum  # noqa: E402

WARMUP_TOPICS = 20


def chunks(names: list[str], size: int) -> list[list[str]]:
    return [names[i : i + size] for i in range(0, len(names), size)]


def create_topics(admin: Any, names: list[str], partitions: int, per_request: int = 1) -> float:
    """Seconds from the first request to the last answer (contract 2); raises on any failed answer."""
    from confluent_kafka.admin import NewTopic

    t0 = time.monotonic()
    futures = []
    for group in chunks(names, per_request):
        futures.extend(
            admin.create_topics([NewTopic(n, partitions, 1) for n in group], request_timeout=120).values()
        )
    for f in futures:
        f.result(180)
    return time.monotonic() - t0


def alter_configs(admin: Any, names: list[str], value: str, per_request: int = 1) -> float:
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    def resource(n: str) -> Any:
        entry = ConfigEntry("retention.ms", value, incremental_operation=AlterConfigOpType.SET)
        return ConfigResource(ResourceType.TOPIC, n, incremental_configs=[entry])

    t0 = time.monotonic()
    futures = []
    for group in chunks(names, per_request):
        futures.extend(
            admin.incremental_alter_configs([resource(n) for n in group], request_timeout=120).values()
        )
    for f in futures:
        f.result(180)
    return time.monotonic() - t0


def check_topics(admin: Any, names: list[str], partitions: int) -> None:
    """The broker's metadata lists every topic with its partitions (it learns them from the metadata log
    shortly after the controller answered)."""
    deadline = time.monotonic() + 120
    while True:
        meta = admin.list_topics(timeout=60)
        wrong = [n for n in names if n not in meta.topics or len(meta.topics[n].partitions) != partitions]
        if not wrong:
            return
        if time.monotonic() > deadline:
            raise SystemExit(
                f"{len(wrong)} topic(s) missing or with the wrong partition count, e.g. {wrong[:3]}"
            )
        time.sleep(0.5)


def _controller_id(admin: Any) -> int:
    """The controller the broker names, or -1 while it names none or the answer fails: right after start a broker
    sometimes closes librdkafka's bootstrap connection (a "Partial response" KafkaException), which is retried."""
    from confluent_kafka import KafkaException

    try:
        return int(admin.list_topics(timeout=15).controller_id)
    except KafkaException:
        return -1


def run_kind(kind: str, root: Path, args: argparse.Namespace) -> dict[str, Any]:
    from confluent_kafka.admin import AdminClient

    extra = {"controller.quorum.append.linger.ms": str(args.linger_ms)}
    q = MixedQuorum(root / "quorum", [kind] * args.controllers, extra=extra)
    for node in q.nodes:
        node.jvm_opts = JVM_FLAGS
    broker = None
    try:
        q.start_all()
        q.wait_leader(timeout=120)
        broker = broker_node(q, root)
        broker.jvm_opts = JVM_FLAGS
        broker.start()
        wait_log(broker, r"The broker has been unfenced", 180)
        wait_log(broker, r"Kafka Server started", 180)
        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{broker.port}"})
        deadline = time.monotonic() + 60
        while _controller_id(admin) < 0:  # the admin client sends its RPCs there
            if time.monotonic() > deadline:
                raise SystemExit("the broker never named a controller in its Metadata answers")
            time.sleep(0.2)
        warm = [f"warm-{i}" for i in range(WARMUP_TOPICS)]
        create_topics(admin, warm, args.partitions)
        alter_configs(admin, warm, "3600000")
        out: dict[str, Any] = {}
        for mode, per_request in (("single", 1), ("batched", args.batch)):
            names = [f"{mode}-{i:05d}" for i in range(args.topics)]
            create_s = create_topics(admin, names, args.partitions, per_request)
            check_topics(admin, names, args.partitions)
            alter_s = [alter_configs(admin, names, str(7_200_000 + r), per_request) for r in range(2)]
            out[mode] = {
                "create_topics_s": round(create_s, 3),
                "create_topics_per_s": round(len(names) / create_s, 1),
                "partitions_per_s": round(len(names) * args.partitions / create_s, 1),
                "alter_configs_s": [round(s, 3) for s in alter_s],
                "alter_configs_per_s": round(len(names) * len(alter_s) / sum(alter_s), 1),
            }
        del admin
        return out
    except BaseException:
        print(q.tails(2000), file=sys.stderr)
        if broker is not None:
            print(broker.tail(3000), file=sys.stderr)
        raise
    finally:
        if broker is not None:
            broker.stop()
        q.stop_all()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--topics", type=int, default=1000)
    ap.add_argument("--partitions", type=int, default=6)
    ap.add_argument("--batch", type=int, default=100, help="topics per request in the batched mode")
    ap.add_argument("--controllers", type=int, default=3, help="voters in each controller quorum (1 or 3)")
    ap.add_argument(
        "--linger-ms",
        type=int,
        default=25,
        help="controller.quorum.append.linger.ms of every controller (default 25)",
    )
    ap.add_argument("--json", action="store_true", help="print one machine-readable line")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="kraftd-controller-bench-"))
    try:
        res: dict[str, Any] = {
            "bench": "controller",
            "topics": args.topics,
            "partitions": args.partitions,
            "controllers": args.controllers,
            "linger_ms": args.linger_ms,
        }
        for kind in ("kraftd", "kafka"):
            res[kind] = run_kind(kind, work / kind, args)
        res["ratio"] = {
            mode: {
                op: round(res["kraftd"][mode][f"{op}_per_s"] / res["kafka"][mode][f"{op}_per_s"], 3)
                for op in ("create_topics", "alter_configs")
            }
            for mode in ("single", "batched")
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.json:
        print(json.dumps(res))
        return
    for mode in ("single", "batched"):
        for kind in ("kraftd", "kafka"):
            r = res[kind][mode]
            print(
                f"{mode:7s} {kind:6s} CreateTopics {r['create_topics_per_s']:8.1f} topics/s "
                f"({r['partitions_per_s']:.0f} partitions/s)  IncrementalAlterConfigs {r['alter_configs_per_s']:8.1f} ops/s"
            )
    print("ratio kraftd / Kafka (> 1: kraftd faster):", json.dumps(res["ratio"]))


if __name__ == "__main__":
    main()
