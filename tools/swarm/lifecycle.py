"""An emulated broker's lifecycle against the active controller (tools.swarm.broker's contracts 1-2).

Contracts (Kafka 4.3.1's BrokerLifecycleManager; docs/SWARM.md):
1. Lifecycle: STARTING (registered, WantFence) -> RECOVERY once a heartbeat answer says IsCaughtUp -> RUNNING
   once an answer says not fenced. STARTING heartbeats again after 10 ms, the other states after
   ``heartbeat_interval_ms``; a failed heartbeat is retried after an exponential backoff (100 ms doubling, capped at
   the session timeout: Kafka's ExponentialBackoff(100, 2, broker.session.timeout.ms)). STALE_BROKER_EPOCH and
   BROKER_ID_NOT_REGISTERED make the broker register again (same incarnation id).
1a. A controller request is never handed to the connection of a controller in its reconnect backoff: it waits
   ``retry_backoff_ms`` and looks up the active controller again, as Kafka's NodeToControllerRequestThread does (a
   node in backoff is not ready; each poll rebuilds the request for the controller the metadata names then). Handed
   to that connection, a heartbeat waited out the dead controller's backoff (up to 1 s +20%) after the broker's
   observer had learned the new leader: 0.7-1.0 s of "every heartbeat answered" after a failover, on both kinds
   (docs/SWARM.md, session 20).
2. Controlled shutdown (:meth:`SwarmBroker.begin_shutdown`): a heartbeat with WantShutDown goes out at once; after
   the first answer without ShouldShutDown the next goes out 50 ms later, then every interval, until an answer
   carries ShouldShutDown (Kafka 4.3.1 BrokerLifecycleManager: "schedule our next heartbeat a little bit sooner
   than we usually would" on its first pending controlled shutdown response); the broker then stops (STOPPED).
   :meth:`SwarmBroker.kill` stops everything at once, as kill -9 would (no more heartbeats or fetches).
"""

from __future__ import annotations

from dataclasses import dataclass

from kwire.errors import ErrorCode

FIRST_PENDING_SHUTDOWN_S = 0.05  # contract 2
STARTING, RECOVERY, RUNNING, STOPPED, KILLED = "STARTING", "RECOVERY", "RUNNING", "STOPPED", "KILLED"
PENDING_SHUTDOWN = "PENDING_CONTROLLED_SHUTDOWN"
REREGISTER = {ErrorCode.STALE_BROKER_EPOCH, ErrorCode.BROKER_ID_NOT_REGISTERED}


@dataclass
class SwarmConfig:
    cluster_id: str
    voters: dict[int, tuple[str, int]]
    heartbeat_interval_ms: int = 2000  # broker.heartbeat.interval.ms
    retry_backoff_ms: int = 50  # between observer fetches that found no leader
    request_timeout_s: float = 5.0  # heartbeats, registrations, AlterPartition (retried within it)
    session_timeout_ms: int = 9000  # broker.session.timeout.ms: caps the backoff after failed requests
    quorum_request_timeout_s: float = 2.0  # controller.quorum.request.timeout.ms, on top of the long poll


def backoff_s(failures: int, session_timeout_ms: int) -> float:
    """The pause after ``failures`` failed controller requests in a row (contract 1: 100 ms doubling, capped at
    the session timeout)."""
    return float(min(0.1 * 2 ** min(failures - 1, 10), session_timeout_ms / 1000))
