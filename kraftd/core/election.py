"""Elections: pre-vote (KIP-996), vote (KIP-595) and the timers that start them.

Invariants:
1. A Prospective never changes its epoch or persists anything; its pre-votes carry its current epoch.
2. A majority of pre-vote grants makes it a Candidate (epoch + 1, durable self-vote); a majority of
   rejections or its election timeout returns it to Follower of the known leader, else Unattached, in the
   same epoch. A Candidate that is rejected backs off (binary exponential) and returns to Prospective.
3. A standard vote is granted at most once per epoch (or again to the same replica), only with no known
   leader and an up-to-date log, and is durable before the response leaves (node invariant 1).
4. A pre-vote grant is never persisted. Leaders never grant pre-votes; followers only before their first
   successful fetch from their leader.
5. Request validation order follows Kafka: cluster id, topic/partition, epochs/offsets, fenced epoch, then
   adopt a higher epoch, then the voter key.
6. A Prospective entered on a follower's fetch timeout (unless an EndQuorumEpoch set that timer) sends its
   pre-votes only after a random delay in [0, prospective_jitter_ms); meanwhile it is a Prospective in every
   other respect (the usual grant rules, epoch adoption and timeouts). The delay is 0 by default: Kafka 4.3.1
   sends them in the poll that enters Prospective (KafkaRaftClient.pollFollowerAsVoter, pollProspective), and
   invariant 7 alone keeps the followers of a failed leader, which time out within milliseconds of each other,
   from both becoming Candidates (the 0-150 ms delay, from before invariant 7, cost a failover up to 150 ms:
   99 ms in one at 1M partitions, issue 24 session 15).
7. A Prospective whose own pre-votes have left grants another's up-to-date pre-vote only if that log is
   strictly newer, the sender has a lower replica id, or the sender already rejected our pre-vote (it then
   cannot grant us, so yielding costs nothing). Of two Prospectives soliciting at once with equal logs exactly
   one grants the other, so they cannot both become Candidates and split the vote, whatever delays their
   requests meet (a rejection is always safe: it delays, never splits).
7a. A Prospective asks a voter for its pre-vote a second time, once, when that voter rejected its pre-vote and
   also solicited its own, which this Prospective refused (in either order). The rejection came while that voter
   still followed the failed leader (a follower that has fetched rejects, invariant 4); its own pre-vote shows it
   no longer does, so it may now grant. It does: it was refused either for an older log (then ours is newer) or
   by the tie-break (then our id is lower), so exactly one of the two becomes a Candidate. Without it, the
   follower whose log is longer (the leader's last batch reached only it) times out first, is rejected by the
   other, which still follows, then rejects that one's pre-vote for its shorter log: neither can win until both
   election timeouts and a second fetch timeout have passed (a 5 s failover, CI stop 34). Pre-votes are never
   persisted (invariant 4), so asking again is safe; Kafka 4.3.1 keeps the rejection.
"""

from __future__ import annotations

from typing import Any

from kraftd.core import messages as m
from kraftd.core.context import NodeContext
from kraftd.core.log import OffsetAndEpoch
from kraftd.core.states import Candidate, Follower, Prospective, Unattached
from kraftd.core.types import NO_LEADER, ZERO_UUID, ElectionState, ReplicaKey, Role
from kwire.errors import ErrorCode

_RETRY_BACKOFF_BASE_MS = 100


def poll_unattached(node: NodeContext, d: Unattached) -> None:
    """A voter's Unattached timer (observers look for the leader instead: replication)."""
    single = node.voters.ids == (node.local.id,)
    if (single or node.now >= d.election_deadline) and not node.shutting_down:
        to_prospective(node)


def to_prospective(node: NodeContext, jitter: bool = False) -> None:
    """``jitter`` is for a follower's fetch timeout (invariant 6)."""
    leader = node.leader_id() if node.role in (Role.FOLLOWER, Role.UNATTACHED) else NO_LEADER
    data = Prospective(node.election_deadline(), leader, {node.local.id})
    span = node.config.prospective_jitter_ms
    if jitter and span > 0:
        data.votes_not_before = node.now + node.rng.randrange(span)
    node.transition(Role.PROSPECTIVE, data, node.election)


def to_candidate(node: NodeContext) -> None:
    state = ElectionState(node.epoch + 1, NO_LEADER, node.local)
    node.transition(Role.CANDIDATE, Candidate(node.election_deadline(), {node.local.id}), state)


def _lost(node: NodeContext, d: Prospective) -> None:
    if d.leader_id >= 0:
        node.to_follower(node.epoch, d.leader_id)
    else:
        node.to_unattached(node.epoch)


def election_backoff_ms(node: NodeContext) -> int:
    retries = max(1, node.election_retries)
    bound = 2 << min(20, retries - 1)
    return int(min(_RETRY_BACKOFF_BASE_MS * node.rng.randrange(bound), node.config.election_backoff_max_ms))


def poll_election(node: NodeContext, d: Prospective | Candidate) -> None:
    majority = node.voters.majority()
    can_still_win = len(node.voters.voters) - len(d.rejected) >= majority
    if isinstance(d, Prospective):
        if len(d.granted) >= majority:
            to_candidate(node)
        elif not can_still_win or node.now >= d.election_deadline:
            _lost(node, d)
        elif node.now >= d.votes_not_before:
            _send_votes(node, d, pre_vote=True)
        return
    if len(d.granted) >= majority:
        node.election_retries = 0
        node.become_leader(tuple(sorted(d.granted)))
    elif d.backoff_until is not None:
        if node.now >= d.backoff_until:
            to_prospective(node)
    elif not can_still_win:
        node.election_retries += 1
        d.backoff_until = node.now + election_backoff_ms(node)
    elif node.now >= d.election_deadline:
        node.election_retries += 1
        to_prospective(node)
    else:
        _send_votes(node, d, pre_vote=False)


def _send_votes(node: NodeContext, d: Prospective | Candidate, pre_vote: bool) -> None:
    last = OffsetAndEpoch(node.log.end_offset, node.log.last_epoch)
    for voter in node.voters.voters:
        if voter.id in d.granted or voter.id in d.rejected or not node.can_send(voter.id):
            continue
        req = m.vote_request(node.cluster_id, voter, node.epoch, node.local, last, pre_vote)
        node.send(voter.id, req)


def handle_vote_request(node: NodeContext, msg: Any) -> Any:
    if msg.cluster_id is not None and node.cluster_id is not None and msg.cluster_id != node.cluster_id:
        return m.vote_response(ErrorCode.INCONSISTENT_CLUSTER_ID, ErrorCode.NONE, NO_LEADER, -1, False)
    part = m.single_partition(msg)
    if part is None:
        return m.vote_response(ErrorCode.INVALID_REQUEST, ErrorCode.NONE, NO_LEADER, -1, False)
    epoch, pre = part.replica_epoch, part.pre_vote
    last = OffsetAndEpoch(part.last_offset, part.last_offset_epoch)
    bad_epoch = last.epoch > epoch if pre else last.epoch >= epoch
    if last.offset < 0 or last.epoch < 0 or bad_epoch or part.replica_id < 0:
        return _reject(node, ErrorCode.INVALID_REQUEST)
    if epoch < node.epoch:
        return _reject(node, ErrorCode.FENCED_LEADER_EPOCH)
    if epoch > node.epoch:
        node.maybe_transition(NO_LEADER, epoch)
    dir_ok = part.voter_directory_id == ZERO_UUID or node.local.directory_id in (
        None,
        part.voter_directory_id,
    )
    if (msg.voter_id >= 0 and msg.voter_id != node.local.id) or not dir_ok:
        return _reject(node, ErrorCode.INVALID_VOTER_KEY)
    candidate = m.key_of(part.replica_id, part.replica_directory_id)
    granted = can_grant(node, candidate, last, pre)
    if granted and not pre and node.election.voted_key != candidate:
        node.record_vote(candidate)
    d = node.data
    if pre and not granted and isinstance(d, Prospective) and candidate.id in node.voters.ids:
        d.refused.add(candidate.id)
        _maybe_resolicit(d, candidate.id)
    return m.vote_response(ErrorCode.NONE, ErrorCode.NONE, node.leader_id(), node.epoch, granted)


def _reject(node: NodeContext, code: ErrorCode) -> Any:
    return m.vote_response(ErrorCode.NONE, code, node.leader_id(), node.epoch, False)


def can_grant(node: NodeContext, candidate: ReplicaKey, last: OffsetAndEpoch, pre_vote: bool) -> bool:
    """The per-state grant rules (invariants 3 and 4)."""
    up_to_date = (last.epoch, last.offset) >= (node.log.last_epoch, node.log.end_offset)
    role, d = node.role, node.data
    if pre_vote:
        if role is Role.LEADER:
            return False
        if isinstance(d, Follower) and node.is_voter:
            return up_to_date and not d.has_fetched
        if isinstance(d, Prospective) and node.now >= d.votes_not_before:
            ours = (node.log.last_epoch, node.log.end_offset)
            theirs = (last.epoch, last.offset)
            if theirs < ours:
                return False
            return theirs > ours or candidate.id < node.local.id or candidate.id in d.rejected
        return up_to_date
    if role not in (Role.UNATTACHED, Role.PROSPECTIVE):
        return False
    voted = node.election.voted_key
    if voted is not None and not node.bugs.double_vote:
        return voted.matches(candidate)
    if node.leader_id() >= 0:
        return False
    return up_to_date


def handle_vote_response(node: NodeContext, source: int, request: Any, resp: Any) -> None:
    d = node.data
    if not isinstance(d, Prospective | Candidate):
        return
    req = m.single_partition(request)
    if req is None or req.pre_vote != isinstance(d, Prospective) or req.replica_epoch != node.epoch:
        return
    if resp.error_code != ErrorCode.NONE:
        if resp.error_code == ErrorCode.UNSUPPORTED_VERSION and isinstance(d, Prospective):
            to_candidate(node)  # the quorum may predate pre-vote (KIP-996 compatibility)
        return
    part = m.single_partition(resp)
    if part is None:
        return
    if part.leader_epoch > node.epoch:
        node.maybe_transition(part.leader_id, part.leader_epoch)
        return
    if part.leader_epoch < node.epoch or part.error_code != ErrorCode.NONE:
        return
    if part.leader_id >= 0 and part.leader_id != node.local.id and node.leader_id() < 0:
        node.maybe_transition(part.leader_id, part.leader_epoch)
        return
    if part.vote_granted:
        d.granted.add(source)
    else:
        d.rejected.add(source)
        if isinstance(d, Prospective):
            _maybe_resolicit(d, source)


def _maybe_resolicit(d: Prospective, voter: int) -> None:
    """Invariant 7a: the next poll sends ``voter`` our pre-vote again (once per Prospective state)."""
    if voter in d.rejected and voter in d.refused and voter not in d.resolicited:
        d.resolicited.add(voter)
        d.rejected.discard(voter)
