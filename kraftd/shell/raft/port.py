"""What a part of the shell may ask of the node's Raft side: a Protocol, so the parts depend on it and only
kraftd.shell.node (which implements it) knows them all (issue 23: no import circle).

Contracts:
1. :meth:`RaftPort.append` appends as leader and resolves with the last offset once committed
   (kraftd.shell.node contract 7); ``on_range`` is called with the OffsetRange before anything else appends.
2. :meth:`RaftPort.post`, :meth:`RaftPort.queue_tick` and :meth:`RaftPort.step_tick` reach the driver, the
   one task that steps the core (kraftd.shell.node contract 4); only the driver calls ``step_tick``;
   :meth:`RaftPort.step_now` steps an event at once while the driver idles (node contract 4a).
3. ``core`` and ``client`` are read, never stepped, outside the driver.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, Protocol

from kraftd.config import KraftConfig
from kraftd.core.client import RaftClient
from kraftd.core.events import Event
from kraftd.core.node import RaftNode
from kraftd.core.types import OffsetRange
from kraftd.shell.net.transport import PeerConnection
from kraftd.shell.raft.persistence import QuorumSetup
from kraftd.storage.layout import NodeStorage


class RaftPort(Protocol):
    config: KraftConfig
    cluster_id: str
    client: RaftClient
    peers: dict[int, PeerConnection]
    learned_endpoints: dict[int, tuple[str, int]]  # kraftd.shell.net.membership contract 1
    setup: QuorumSetup
    storage: NodeStorage | None
    fatal: BaseException | None

    @property
    def core(self) -> RaftNode: ...

    async def append(
        self, records: list[bytes], on_range: Callable[[OffsetRange], None] | None = None
    ) -> int: ...

    def known_leader(self) -> int: ...

    def post(self, event: Event) -> None: ...

    def queue_tick(self) -> None: ...

    def step_tick(self) -> None: ...

    def step_now(self, event: Event) -> None: ...

    def spawn_task(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]: ...

    def connect(self, host: str, port: int, prefix: str, timeout_ms: int = 0) -> PeerConnection: ...

    def now_ms(self) -> int: ...

    async def shutdown(self) -> None: ...
