"""kraftd's own KraftdAppend RPC (api key 651, messages/KraftdAppendRequest.json): append framed metadata
records through this node's RaftClient and answer once they commit.

Contracts:
1. Only the leader appends. Elsewhere, and when leadership is lost before the records commit, the answer is
   NOT_LEADER_OR_FOLLOWER with the leader this node knows (-1 when none), so a client re-routes.
2. Every value must carry the metadata record frame (kwire.metadata_frame, frame version 1): Kafka peers
   that replicate the log decode every value and stop on anything else. Others get INVALID_RECORD and
   nothing is appended.
3. A request whose cluster id differs from ours gets INCONSISTENT_CLUSTER_ID; one whose records do not
   commit within its TimeoutMs gets REQUEST_TIMED_OUT (they may still commit later).
"""

from __future__ import annotations

import asyncio

from generated.kraftd_append_request import KraftdAppendRequest
from generated.kraftd_append_response import KraftdAppendResponse
from generated.messages import ApiKey
from kraftd.core.replication import NotLeaderError, RecordTooLargeError
from kraftd.shell.raft.port import RaftPort
from kwire.errors import CorruptRecordError, ErrorCode, KraftError
from kwire.metadata_frame import decode_metadata_frame

KRAFTD_APPEND = ApiKey.KRAFTD_APPEND
__all__ = ["KRAFTD_APPEND", "handle_append"]


def _error(node: RaftPort, code: ErrorCode, message: str) -> KraftdAppendResponse:
    leader = node.core.leader_and_epoch()
    return KraftdAppendResponse(
        error_code=code,
        error_message=message,
        leader_id=node.known_leader(),
        leader_epoch=leader.epoch,
    )


async def handle_append(node: RaftPort, req: KraftdAppendRequest) -> KraftdAppendResponse:
    if req.cluster_id is not None and req.cluster_id != node.cluster_id:
        return _error(
            node,
            ErrorCode.INCONSISTENT_CLUSTER_ID,
            f"cluster id {req.cluster_id} is not this quorum's {node.cluster_id}",
        )
    values = [r.value for r in req.records]
    if not values:
        return _error(node, ErrorCode.INVALID_REQUEST, "no records")
    for i, v in enumerate(values):
        try:
            decode_metadata_frame(v)
        except CorruptRecordError as exc:
            return _error(node, ErrorCode.INVALID_RECORD, f"record {i}: {exc}")
    epoch = node.core.epoch
    try:
        last = await asyncio.wait_for(node.append(values), max(req.timeout_ms, 1) / 1000)
    except TimeoutError:
        return _error(node, ErrorCode.REQUEST_TIMED_OUT, f"not committed within {req.timeout_ms} ms")
    except NotLeaderError as exc:
        return _error(node, ErrorCode.NOT_LEADER_OR_FOLLOWER, str(exc))
    except RecordTooLargeError as exc:
        return _error(node, ErrorCode.MESSAGE_TOO_LARGE, str(exc))
    except KraftError as exc:
        return _error(node, ErrorCode(exc.error_code), str(exc))
    return KraftdAppendResponse(
        error_code=ErrorCode.NONE,
        base_offset=last - len(values) + 1,
        last_offset=last,
        leader_id=node.config.node_id,
        leader_epoch=epoch,
    )
