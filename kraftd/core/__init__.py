"""kraftd.core: the KRaft quorum (KIP-595 as shipped, KIP-996 pre-vote and check-quorum) as a pure,
deterministic state machine. No IO, clocks, threads or global randomness: the caller passes time in
events and a ``random.Random`` in.

Entry point for the shell (daemon) and the simulator::

    node = RaftNode(local=ReplicaKey(1, dir_id), voters=VoterSet(...), config=QuorumConfig(),
                    rng=random.Random(seed), cluster_id="...", election_state=loaded_state,
                    log=loaded_log, now_ms=now)
    client = RaftClient(node)            # optional facade: listeners, append, describe_quorum
    effects = client.step(Tick(now))     # first call: emits any start-up effects and a deadline
    ... for every input: effects = client.step(event) and execute them in order.

Inputs (kraftd.core.events): Tick, RequestReceived(token, message), ResponseReceived(source,
request_id, message), AppendRecords, LogFlushed(offset), Shutdown. Outputs (kraftd.core.effects):
PersistElectionState, TruncateLog, AppendBatches, FlushLog, SendRequest(destination, request_id,
message), SendResponse(token, message), ApplyCommitted, LeaderChanged, AppendFailed, SetDeadline.

Execution contract ("persist, then send, then apply") — numbered in kraftd.core.effects:
1. execute the effects of one step in list order (the core already orders them);
2. PersistElectionState is durable before anything after it in the same step is executed;
3. log effects apply at once, FlushLog completes asynchronously and is reported with LogFlushed, and
   anything not flushed may be lost on a crash;
4. deliver a Tick no later than the last SetDeadline;
5. a failed send (disconnect, or a version the peer lacks, e.g. a pre-vote to a Vote v0-1 peer) is
   reported as ResponseReceived with ``messages.error_response(request, code)`` (BROKER_NOT_AVAILABLE /
   UNSUPPORTED_VERSION); the core itself times out unanswered requests.
Messages are the generated classes; the shell chooses wire versions.
"""

from kraftd.core.client import QuorumInfo, RaftClient, RaftListener, ReplicaInfo
from kraftd.core.config import BugFlags, QuorumConfig
from kraftd.core.log import LogBatch, OffsetAndEpoch, ReplicatedLog
from kraftd.core.node import RaftNode
from kraftd.core.replication import NotLeaderError, RecordTooLargeError
from kraftd.core.transitions import IllegalTransitionError
from kraftd.core.types import ElectionState, LeaderAndEpoch, OffsetRange, ReplicaKey, Role, VoterSet

__all__ = [
    "BugFlags",
    "ElectionState",
    "IllegalTransitionError",
    "LeaderAndEpoch",
    "LogBatch",
    "NotLeaderError",
    "OffsetAndEpoch",
    "OffsetRange",
    "QuorumConfig",
    "QuorumInfo",
    "RaftClient",
    "RaftListener",
    "RaftNode",
    "RecordTooLargeError",
    "ReplicaInfo",
    "ReplicaKey",
    "ReplicatedLog",
    "Role",
    "VoterSet",
]
