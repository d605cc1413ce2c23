"""Quorum configuration (Kafka's ``controller.quorum.*`` defaults) and the planted-bug switches.

Invariants:
1. Every duration is in milliseconds of the caller's clock (``now_ms`` of events).
2. The election timeout is randomized per arming in [T, 2T) from the ``random.Random`` the caller passes.
3. ``BugFlags`` exist only so the simulator can prove it catches known-unsafe behaviour; production
   configs leave them all False.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kraftd.core.types import Listener


@dataclass(frozen=True, slots=True)
class BugFlags:
    """Known-unsafe deviations, each a switch the simulator must catch."""

    ack_before_flush: bool = False  # report unflushed offsets to the leader
    commit_old_epoch: bool = False  # advance the HWM before a record of the leader's own epoch commits
    no_check_quorum: bool = False  # a leader cut off from the majority never resigns
    double_vote: bool = False  # grant a second, different vote in one epoch
    snapshot_missing_record: bool = False  # a snapshot leaves out the state machine's last record
    reconfig_before_commit: bool = False  # change voters before committing in the own epoch (KIP-853)
    two_uncommitted_changes: bool = False  # accept a voter change while another is uncommitted
    report_inherited_hwm: bool = False  # a new leader reports its follower-era HWM before committing
    add_before_commit: bool = False  # AddRaftVoter before the leader committed in its own epoch (KIP-853)
    add_while_uncommitted: bool = False  # AddRaftVoter while another voter change is pending or uncommitted
    auto_join_rejoins: bool = False  # the leader auto-joins a key that was a voter before (KAFKA-19850)
    # Controller (metadata state machine) bugs, caught by the controller simulator (kraftd/sim/controller_*.py):
    fence_keeps_leader: bool = False  # fencing a broker shrinks its ISRs but leaves it leading
    isr_admits_fenced: bool = False  # AlterPartition accepts a fenced broker into an ISR
    reuse_broker_epoch: bool = False  # a broker registering again keeps its previous broker epoch
    read_without_confirm: bool = False  # a leader answers reads without confirming (kraftd.core.reads)
    read_without_read_offset: bool = False  # a non-leader serves reads from its applied state at once
    copy_image_on_activation: bool = False  # activation copies the image on the loop (before issue 22)

    def any(self) -> bool:
        return (
            self.ack_before_flush
            or self.commit_old_epoch
            or self.no_check_quorum
            or self.double_vote
            or self.snapshot_missing_record
            or self.reconfig_before_commit
            or self.two_uncommitted_changes
            or self.report_inherited_hwm
            or self.add_before_commit
            or self.add_while_uncommitted
            or self.auto_join_rejoins
            or self.fence_keeps_leader
            or self.isr_admits_fenced
            or self.reuse_broker_epoch
            or self.read_without_confirm
            or self.read_without_read_offset
            or self.copy_image_on_activation
        )


@dataclass(frozen=True, slots=True)
class QuorumConfig:
    election_timeout_ms: int = 1000
    fetch_timeout_ms: int = 2000
    election_backoff_max_ms: int = 1000
    request_timeout_ms: int = 2000
    retry_backoff_ms: int = 20
    append_linger_ms: int = 25
    # kraftd.core.replication invariant 5a: also write pending records once everything written is committed.
    append_linger_adaptive: bool = True
    fetch_max_wait_ms: int = 500
    max_batch_size_bytes: int = 8 * 1024 * 1024
    fetch_max_bytes: int = 8 * 1024 * 1024
    observer_session_timeout_ms: int = 300_000
    # A follower whose fetch timer expired waits a random [0, this) before its first pre-votes (election
    # invariant 6). 0, as Kafka 4.3.1 sends them at once; election invariant 7 keeps two Prospectives that
    # pre-vote each other at once from splitting the vote.
    prospective_jitter_ms: int = 0
    # A leader shutting down gracefully waits up to this long for what it wrote to commit before it resigns
    # (kraftd.core.replication invariant 8).
    shutdown_drain_ms: int = 500
    # KIP-630: the log before the latest snapshot is deleted once it holds more than retention_bytes or its
    # oldest batch is older than retention_ms (metadata.max.retention.bytes/.ms; -1 disables that bound).
    retention_bytes: int = 100 * 1024 * 1024
    retention_ms: int = 7 * 24 * 3600 * 1000
    # When the state machine should snapshot (metadata.log.max.snapshot.interval.ms and
    # metadata.log.max.record.bytes.between.snapshots): see RaftClient.snapshot_due.
    snapshot_interval_ms: int = 3600 * 1000
    snapshot_max_record_bytes: int = 20 * 1024 * 1024
    # The default listener (first of controller.listener.names): voters must keep listening on it (KIP-853).
    listener_name: str = "CONTROLLER"
    # KIP-853 observers: ids standing for controller.quorum.bootstrap.servers (-2, -3, ... as Kafka numbers
    # them), asked for the leader while no voter set is known; auto-join (controller.quorum.auto.join.enable)
    # with this node's own controller listeners.
    bootstrap_ids: tuple[int, ...] = ()
    auto_join: bool = False
    report_to_leader: bool = (
        False  # kraft.version 0 voters send UpdateRaftVoter to each new leader (auto_join 4)
    )
    local_listeners: tuple[Listener, ...] = ()
    # What this node sends as ApiVersions ClientSoftwareVersion (the shell passes the package's version).
    software_version: str = "unknown"
    bugs: BugFlags = field(default_factory=BugFlags)

    @property
    def check_quorum_timeout_ms(self) -> int:
        return int(self.fetch_timeout_ms * 1.5)

    @property
    def begin_quorum_resend_ms(self) -> int:
        return self.fetch_timeout_ms // 2
