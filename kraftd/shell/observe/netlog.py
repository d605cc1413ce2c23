"""What the node logs about its peers: connections established and lost, and cluster-id mismatches on
both sides of a request.

Contracts:
1. A peer that becomes reachable is logged once at INFO; a failure to reach it is logged at WARNING at most
   once per ``interval_s`` per peer (with the count of suppressed repeats), and the next success is logged
   again as a reconnection.
2. INCONSISTENT_CLUSTER_ID is logged on both sides, rate-limited per peer: the receiving side names the
   requester's address, the api and both cluster ids (as Kafka's receiving controller logs it); the
   sending side names the peer and says that it was formatted with another cluster id.
"""

from __future__ import annotations

import logging
from typing import Any

from kraftd.shell.observe.logging_setup import RateLimiter
from kwire.errors import ErrorCode

log = logging.getLogger("kraftd.network")


class NetLog:
    def __init__(self, node_id: int, cluster_id: str, interval_s: float = 30.0) -> None:
        self.node_id = node_id
        self.cluster_id = cluster_id
        self.limits = RateLimiter(interval_s)
        self._up: dict[int, bool] = {}

    def reached(self, peer: int, where: str) -> None:
        """Contract 1: a request to ``peer`` got a response."""
        if not self._up.get(peer, False):
            again = peer in self._up
            log.info(
                "node %d: %s node %d at %s",
                self.node_id,
                "reconnected to" if again else "connected to",
                peer,
                where,
            )
            self._up[peer] = True
            self.limits.forget(("down", peer))

    def failed(self, peer: int, where: str, error: str) -> None:
        """Contract 1: a request to ``peer`` got no response."""
        was_up = self._up.get(peer, False)
        self._up[peer] = False
        if was_up:
            self.limits.forget(("down", peer))
        key = ("down", peer)
        if self.limits.allow(key):
            log.warning(
                "node %d: cannot reach node %d at %s: %s%s",
                self.node_id,
                peer,
                where,
                error,
                self.limits.suppressed(key),
            )

    def sent_rejected(self, peer: int, where: str, request: Any, response: Any) -> None:
        """Contract 2, sending side: ``response`` answered our ``request``."""
        if getattr(response, "error_code", ErrorCode.NONE) != ErrorCode.INCONSISTENT_CLUSTER_ID:
            return
        key = ("cluster-out", peer)
        if self.limits.allow(key):
            log.error(
                "node %d: node %d at %s rejected our %s with INCONSISTENT_CLUSTER_ID: it was formatted with a "
                "cluster id other than ours (%s)%s",
                self.node_id,
                peer,
                where,
                type(request).__name__,
                self.cluster_id,
                self.limits.suppressed(key),
            )

    def answered(self, peer: tuple[str, int], request: Any, response: Any) -> None:
        """Contract 2, receiving side: we answered ``request`` from ``peer`` with ``response``."""
        if getattr(response, "error_code", ErrorCode.NONE) != ErrorCode.INCONSISTENT_CLUSTER_ID:
            return
        key = ("cluster-in", peer[0], getattr(request, "cluster_id", None))
        if self.limits.allow(key):
            log.error(
                "node %d: rejected %s from %s:%d with INCONSISTENT_CLUSTER_ID: its cluster id %s is not ours (%s)%s",
                self.node_id,
                type(request).__name__,
                peer[0],
                peer[1],
                getattr(request, "cluster_id", None),
                self.cluster_id,
                self.limits.suppressed(key),
            )
