"""A swarm broker's snapshot transfer, kept as Kafka 4.3.1's observer keeps one (FollowerState.fetchingSnapshot).

Contracts (KafkaRaftClient 4.3.1; docs/SWARM.md session 19):
1. A Fetch answer naming a snapshot starts a transfer at position 0, also when a transfer of that id is under way
   (handleFetchResponse: ``setFetchingSnapshot(log.createNewSnapshotUnchecked(id))``, a new partial file).
2. While a transfer is held, the observer's request to the leader is a FetchSnapshot at the position reached
   (maybeSendFetchOrFetchSnapshot: ``buildFetchSnapshotRequest(id, snapshot.sizeInBytes())``), chunk after
   chunk until the last; the broker then continues from the snapshot's end.
3. A FetchSnapshot that gets no answer (request timeout, lost connection) keeps the transfer and its position; the
   next request is a Fetch to a voter in turn (pollFollowerAsObserver: ``hasRequestTimedOut(leader)`` -> reset ->
   maybeSendFetchToAnyBootstrap, a random bootstrap voter). A voter that is not the leader answers it with an
   error naming the leader, and the transfer resumes at its position; the leader answers it with the snapshot id,
   which starts the transfer again (contract 1). Before, every timed-out chunk sent the broker back to chunk 0
   (1,602 FetchSnapshot timeouts at 1,000 x 1M, each from the start of a 107 MB snapshot; session 18).
4. An error answer ends the transfer (as SNAPSHOT_NOT_FOUND does in handleFetchSnapshotResponse); the next request
   is a Fetch.
5. Only the broker that took the shared replay's turn when its transfer started keeps the chunks (tools.swarm.broker
   contract 3a), across contract 3's resumptions; the turn is given back when the transfer ends or starts again, or
   the broker stops.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from kraftd.core.log import OffsetAndEpoch
from kwire.errors import ErrorCode, NetworkError, RequestTimeoutError
from tools.swarm.replay import SharedReplay

DONE, FAILED, LOST = "done", "failed", "lost"  # the last chunk came; an error answer (4); no answer (3)


class SnapshotTransfer:
    def __init__(self, broker_id: int, snapshot: OffsetAndEpoch, replay: SharedReplay) -> None:
        """Contracts 1, 5."""
        self.broker_id, self.snapshot, self.replay = broker_id, snapshot, replay
        self.position = 0
        self.chunks: list[bytes] | None = [] if replay.take_snapshot(broker_id, snapshot.offset) else None

    def release(self) -> None:
        """Contract 5."""
        self.replay.release_snapshot(self.broker_id)
        self.chunks = None

    def load(self) -> None:
        """Contract 5: the chunks, if this transfer kept them, to the shared replay."""
        if self.chunks is not None:
            self.replay.load_snapshot(b"".join(self.chunks), self.snapshot.offset)

    async def fetch(self, send: Callable[[int], Awaitable[Any]]) -> str:
        """Contracts 2-4: ``send(position)`` asks for the chunk at ``position``; each chunk in turn from the position
        reached. No answer is held while the next chunk is asked for (tools.swarm.broker contract 3a)."""
        while True:
            try:
                resp = await send(self.position)
            except (NetworkError, RequestTimeoutError, OSError):
                return LOST
            part = resp.topics[0].partitions[0] if resp.topics and resp.topics[0].partitions else None
            if resp.error_code != ErrorCode.NONE or part is None or part.error_code != ErrorCode.NONE:
                return FAILED
            data, size = part.unaligned_records, part.size
            del resp, part
            if self.chunks is not None:
                self.chunks.append(bytes(data))
            self.position += len(data)
            if self.position >= size or not data:
                return DONE
            del data
