"""A swarm broker as a partition leader: AlterPartition (issue 24 §1, ISR shrink and expand on command)."""

from __future__ import annotations

from typing import Any

from kwire.errors import ErrorCode
from tools.swarm import frames
from tools.swarm.broker import SwarmBroker


async def alter_isr(broker: SwarmBroker, topic: str, partition: int, isr: list[int]) -> Any | None:
    """Propose ``isr`` for a partition ``broker`` leads (as the shared replay knows it); the answer's partition,
    or None when the controller did not answer."""
    image = broker.hooks.replay.image
    topic_id = image.topic_ids[topic]
    p = image.topics[topic_id].partitions[partition]
    epochs = {b: image.brokers[b].epoch for b in isr if b in image.brokers}
    req = frames.alter_partition(
        broker.id, broker.epoch, topic_id, partition, p.leader_epoch, p.partition_epoch, isr, epochs
    )
    resp = await broker.controller_send(req)
    if resp is None:
        return None
    if resp.error_code != ErrorCode.NONE or not resp.topics:
        return resp
    return resp.topics[0].partitions[0]
