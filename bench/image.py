"""The metadata image at scale, in process: what a new leader and a snapshot cost at N partitions (issue 22).

Usage: .venv/bin/python bench/image.py [--partitions 10000,100000,1000000] [--json]

For each N: an image of 100 brokers and N / 100 topics x 100 partitions (RF 3) is built by
``apply_record`` from decoded records (what replay does after decoding), then measured:
- ``replay_s``: building it (TopicRecord + PartitionRecords, ``apply_record`` only, no decode);
- ``open_s``: opening the leader's uncommitted view (``MetadataController.activation_records``, the step that
  ran on the event loop at every failover);
- ``apply_1k_s``: 1,000 PartitionChangeRecords applied to that uncommitted view, and to the committed image;
- ``fence_10k_s``: the records fencing a broker that leads 10k partitions (``brokers.fence_records`` path is the
  controller's; here the 10k PartitionChangeRecords are applied to the uncommitted view);
- ``rollback_s``: losing leadership (``resign``), which drops the uncommitted view;
- ``snapshot_values_s``: the image written as framed records (KIP-630 snapshot), ``load_s``: an image rebuilt
  from those values; ``checksum_s``: ``MetadataImage.checksum``.
Every number is the best of ``--repeat`` runs (default 3) on one core of this machine, with the garbage
collector tuned as the daemon tunes it (kraftd.shell.observe.looplag.tune_gc; run on a tree without it, the defaults).
The same file run from a checkout of an older tree (``PYTHONPATH`` at that tree) measures the same steps there.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from generated.feature_level_record import FeatureLevelRecord  # noqa: E402
from generated.partition_change_record import PartitionChangeRecord  # noqa: E402
from generated.partition_record import PartitionRecord  # noqa: E402
from generated.register_broker_record import RegisterBrokerRecord  # noqa: E402
from generated.topic_record import TopicRecord  # noqa: E402
from kraftd.controller.apply import apply_record  # noqa: E402
from kraftd.controller.image import MetadataImage  # noqa: E402
from kraftd.controller.image_writer import image_from_values, snapshot_values  # noqa: E402
from kraftd.controller.machine import MetadataController  # noqa: E402

BROKERS = 100
PER_TOPIC = 100


def records(partitions: int) -> list[tuple[int, Any]]:
    """(api key, record) of the image: metadata.version, brokers, topics and partitions."""
    out: list[tuple[int, Any]] = [(12, FeatureLevelRecord(name="metadata.version", feature_level=27))]
    for b in range(BROKERS):
        out.append(
            (0, RegisterBrokerRecord(broker_id=b, broker_epoch=b + 10, incarnation_id=uuid.UUID(int=b + 1)))
        )
    for t in range(max(1, partitions // PER_TOPIC)):
        tid = uuid.UUID(int=(1 << 64) + t)
        out.append((2, TopicRecord(name=f"t{t:07d}", topic_id=tid)))
        for p in range(PER_TOPIC):
            reps = [(t + p + k) % BROKERS for k in range(3)]
            rec = PartitionRecord(partition_id=p, topic_id=tid, replicas=reps, isr=reps, leader=reps[0])
            out.append((3, rec))
    return out


def build(recs: list[tuple[int, Any]]) -> MetadataImage:
    image = MetadataImage()
    for i, (key, rec) in enumerate(recs):
        apply_record(image, i, key, 0, rec)
    return image


def changes(n: int, partitions: int, leader: int = -2) -> list[PartitionChangeRecord]:
    topics = max(1, partitions // PER_TOPIC)
    out = []
    for i in range(n):
        t, p = (i // PER_TOPIC) % topics, i % PER_TOPIC
        tid = uuid.UUID(int=(1 << 64) + t)
        out.append(PartitionChangeRecord(partition_id=p, topic_id=tid, leader=leader, isr=[1, 2]))
    return out


def best(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def measure(partitions: int, repeat: int) -> dict[str, Any]:
    recs = records(partitions)
    t0 = time.perf_counter()
    image = build(recs)
    replay_s = time.perf_counter() - t0
    m = MetadataController(1, [])
    m.committed = image
    m.high_watermark = image.offset + 1

    def open_view() -> None:
        m.become_leader(5, image.offset + 1)
        m.activation_records()

    out: dict[str, Any] = {"partitions": partitions, "records": len(recs), "replay_s": replay_s}
    out["open_s"] = best(open_view, repeat)
    out["rollback_s"] = best(lambda: m.resign(6), repeat)
    open_view()
    k1 = changes(1000, partitions)
    k10 = changes(10_000, partitions, leader=-1)

    def apply_to_view(recs: list[PartitionChangeRecord]) -> None:
        view = m.uncommitted
        assert view is not None
        for i, r in enumerate(recs):
            apply_record(view, image.offset + 1 + i, 5, 0, r)

    out["apply_1k_s"] = best(lambda: apply_to_view(k1), repeat)
    out["fence_10k_s"] = best(lambda: apply_to_view(k10), repeat)
    values: list[bytes] = []

    def write() -> None:
        values[:] = snapshot_values(image)

    out["snapshot_values_s"] = best(write, 1)
    out["load_s"] = best(lambda: image_from_values(values, image.offset + 1), 1)
    out["checksum_s"] = best(image.checksum, 1)
    return {k: (round(v, 6) if isinstance(v, float) else v) for k, v in out.items()}


def main() -> None:
    try:
        from kraftd.shell.observe.looplag import tune_gc
    except ImportError:  # an older tree: Python's defaults
        pass
    else:
        tune_gc()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", default="10000,100000,1000000")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    for n in (int(x) for x in args.partitions.split(",")):
        res = measure(n, args.repeat)
        if args.json:
            print(json.dumps({"bench": "image", **res}), flush=True)
        else:
            print(" ".join(f"{k}={v}" for k, v in res.items()), flush=True)


if __name__ == "__main__":
    main()
