"""The core's requests to other controllers (the SendRequest effect), over the node's peer connections.

Contracts:
1. A request goes to the connection for its destination (kraftd.shell.net.membership's address book); a
   KIP-650 ReadOffset goes to the read connection of kraftd.shell.raft.reads, so reads never queue behind Fetch.
2. Every request gets an answer for the core: the peer's, or ``error_response`` with BROKER_NOT_AVAILABLE (no
   address) or the transport's error code (kraftd.core.effects contract 5); the core times out the rest.
3. What was reached, refused or failed is logged by kraftd.shell.observe.netlog (rate-limited, escaped).
4. :func:`start_now` (kraftd.shell.node contract 12) writes the request at once on a connected peer the address
   book still names and hands the answer (or the error answer of contract 2) to ``on_answer``: a response from
   the read loop that decoded it, in that turn of the loop (kwire.client contract 9a), anything else from the
   future's callback; it returns False, having sent nothing, where :func:`exchange` must do it instead.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any, Protocol

from kraftd.core import messages as core_messages
from kraftd.shell.net import membership
from kraftd.shell.net.transport import PeerError
from kraftd.shell.observe.netlog import NetLog
from kraftd.shell.raft.port import RaftPort
from kraftd.shell.raft.reads import ReadBarriers
from kwire import stagetrace
from kwire.errors import ErrorCode

log = logging.getLogger("kraftd.node")


class PeersPort(RaftPort, Protocol):
    reads: ReadBarriers
    netlog: NetLog


async def exchange(node: PeersPort, dest: int, message: Any) -> Any:
    """Contracts 1-3: the answer to ``message`` from node ``dest``."""
    is_read = isinstance(message, core_messages.ReadOffsetRequest)
    peer = membership.peer_for(node, dest)  # sets the address book entry the read connection uses
    if is_read and peer is not None:
        peer = node.reads.connection(dest)
    if peer is None:
        return core_messages.error_response(message, ErrorCode.BROKER_NOT_AVAILABLE)
    where = f"{peer.host}:{peer.port}"
    try:
        started = time.perf_counter()
        resp = await peer.request(message)
        if stagetrace.ON:
            stagetrace.mark("send.resumed")
        if log.isEnabledFor(logging.DEBUG) and not isinstance(message, core_messages.FetchRequest):
            took = (time.perf_counter() - started) * 1000
            log.debug("%s to node %d answered in %.1f ms", type(message).__name__, dest, took)
        membership.learn(node, resp)
        node.netlog.reached(dest, where)
        node.netlog.sent_rejected(dest, where, message, resp)
    except PeerError as exc:
        node.netlog.failed(dest, where, str(exc).removeprefix(f"{where}: "))
        return core_messages.error_response(message, ErrorCode(exc.error_code))
    return resp


def start_now(node: PeersPort, dest: int, message: Any, on_answer: Callable[[Any], None]) -> bool:
    """Contract 4."""
    peer = node.peers.get(dest)
    if peer is None or not peer.connected or membership.peer_for(node, dest) is not peer:
        return False
    if isinstance(message, core_messages.ReadOffsetRequest):  # on its own connection (contract 1)
        peer = node.reads.connection(dest)
        if peer is None or not peer.connected:
            return False
    where = f"{peer.host}:{peer.port}"

    def answered(done: Any) -> None:
        try:
            resp = peer.outcome(done)
            if stagetrace.ON:
                stagetrace.mark("send.resumed")
            membership.learn(node, resp)
            node.netlog.reached(dest, where)
            node.netlog.sent_rejected(dest, where, message, resp)
        except PeerError as exc:
            node.netlog.failed(dest, where, str(exc).removeprefix(f"{where}: "))
            resp = core_messages.error_response(message, ErrorCode(exc.error_code))
        on_answer(resp)

    # kwire.client contract 9a: a response is stepped in the turn that read it, not one turn later
    return peer.start(message, answered) is not None
