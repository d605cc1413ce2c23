"""Releasing what a stopping node holds (kraftd.shell.node contract 8: after the driver and every task are
cancelled).

Contract: :func:`release` fails every append still waiting for a commit, stops the flush thread, closes every
connection (peers, forwarders, the read connections, the broker RPC clients) and the listener, then the storage
and the metrics endpoint, and logs the node's last measures; each part that was never started is skipped, and a
failing close never keeps the others open.
"""

from __future__ import annotations

import contextlib
from typing import Any


async def release(node: Any) -> None:
    """The contract; ``node`` is a kraftd.shell.node.ControllerNode, possibly only partly started."""
    node.commits.fail_all("the node stopped")
    node.flusher.close()
    for peer in node.peers.values():
        with contextlib.suppress(Exception):
            await peer.close()
    with contextlib.suppress(Exception):
        await node.router.close()
    if getattr(node, "reads", None) is not None:
        await node.reads.close()
    if getattr(node, "rpcs", None) is not None:
        with contextlib.suppress(Exception):
            await node.rpcs.close()
    if getattr(node, "server", None) is not None:
        await node.server.close()
    if node.storage is not None:
        node.storage.close()
    node.metrics.close()
    if getattr(node, "observer", None) is not None:
        node.observer.log_stopped()
