"""Hooks for one swarm broker driven alone in a test (tools.swarm.broker.Hooks): a one-voter config, a replay and
shared decodes of its own, heartbeats recorded as (rtt, error), nothing else."""

from __future__ import annotations

from tools.swarm.broker import SwarmBroker
from tools.swarm.decoding import SharedDecodes
from tools.swarm.lifecycle import SwarmConfig
from tools.swarm.replay import SharedReplay


class Hooks:
    def __init__(self) -> None:
        self.config = SwarmConfig("c", {1: ("127.0.0.1", 1)})
        self.replay = SharedReplay()
        self.decodes = SharedDecodes()
        self.rtts: list[tuple[float, int]] = []

    def heartbeat(self, broker: SwarmBroker, sent: float, rtt: float, error: int, node: int) -> None:
        self.rtts.append((rtt, error))

    def progress(self, broker: SwarmBroker) -> None:
        pass

    def fenced_while_running(self, broker: SwarmBroker) -> None:
        pass

    def disconnected(self, channel: str, reason: str) -> None:
        pass
