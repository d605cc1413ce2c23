"""A KafkaClient's connection state and its response callbacks (kwire.client contracts 6 and 9a; their text is in
kwire.client, which owns these)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from kwire.errors import KraftError
from kwire.framing import FrameDecoder


class Connection:
    """One negotiated socket of a KafkaClient: its frames, correlation ids and in-flight requests."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, max_frame: int) -> None:
        self.reader, self.writer = reader, writer
        self.decoder = FrameDecoder(max_frame)
        self.next_id = 0
        self.pending: dict[int, tuple[int, int, asyncio.Future[Any]]] = {}
        self.eager: dict[int, Callable[[asyncio.Future[Any]], None]] = {}  # contract 9a, by correlation id
        self.closed = False
        self.reader_task: asyncio.Task[None] | None = None

    def fail_all(self, exc: KraftError) -> None:
        self.closed = True
        for _, _, fut in self.pending.values():
            if not fut.done():
                fut.set_exception(exc)
        self.pending.clear()
        self.eager.clear()
        self.writer.close()


def once(
    on_answer: Callable[[asyncio.Future[Any]], None], fut: asyncio.Future[Any]
) -> Callable[[asyncio.Future[Any]], None]:
    """Contract 9a: ``on_answer`` as a done callback of ``fut`` that runs only the first time it is called."""
    called = False

    def once_(done: asyncio.Future[Any]) -> None:
        nonlocal called
        if not called:
            called = True
            on_answer(done)

    fut.add_done_callback(once_)
    return once_


def call_eager(once: Callable[[asyncio.Future[Any]], None], fut: asyncio.Future[Any]) -> None:
    """Contract 9a: run the answer's callback now; what it raises goes where a done callback's would."""
    try:
        once(fut)
    except Exception as exc:  # noqa: BLE001 - reported like a done callback's failure, the read loop goes on
        asyncio.get_running_loop().call_exception_handler(
            {"message": "Exception in an answer callback (kwire.client contract 9a)", "exception": exc}
        )


def retrieve(fut: asyncio.Future[Any]) -> None:
    if not fut.cancelled():
        fut.exception()
