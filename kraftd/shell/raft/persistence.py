"""The bridge between on-disk storage (kraftd.storage) and the core's in-memory view (kraftd.core).

Contracts:
1. :func:`load_core_log` gives the core exactly the batches the recovered disk log holds, in order.
2. Election state maps 1:1 to quorum-state: epoch = leaderEpoch, leader id, voted key = (votedId,
   votedDirectoryId; the zero uuid means "unknown"). ``data_version`` 1 is written when the quorum was
   bootstrapped with directory ids (kraft.version 1), 0 with static ``controller.quorum.voters``.
3. :meth:`DiskMirror.apply` executes TruncateLog/AppendBatches/PersistElectionState and the snapshot effects
   (WriteSnapshot, InstallSnapshot, DeleteLogBefore) synchronously; anything it cannot do raises (LogIOError is
   fatal). A WriteSnapshot whose id is in ``written`` is not written again: the snapshot writer already wrote
   that file durably off the event loop before handing the snapshot to the core
   (kraftd.shell.raft.snapshot_writer contract 1).
4. :func:`load_snapshot_and_log` gives the core the latest snapshot and the log after it; a disk log that cannot
   continue after that snapshot (it ends before it or disagrees on its epoch) is emptied to start at its end,
   exactly as the core would drop it. :func:`older_snapshots` gives it the older snapshot files still retained
   (at or past the log start; Kafka's recoverSnapshots), so that FetchSnapshot serves them after a restart too;
   snapshot files below the log start are deleted.
5. :func:`open_core` builds the core a node starts with from its storage: contracts 1, 2 and 4, the quorum's
   configuration (kraftd.shell.net.wiring) and the injected ``rng`` and start time.
"""

from __future__ import annotations

import logging
import random
import time
import uuid
from dataclasses import dataclass

from kraftd.config import Endpoint, KraftConfig
from kraftd.core.config import QuorumConfig
from kraftd.core.effects import (
    AppendBatches,
    DeleteLogBefore,
    InstallSnapshot,
    PersistElectionState,
    TruncateLog,
    WriteSnapshot,
)
from kraftd.core.log import LogBatch, OffsetAndEpoch, ReplicatedLog
from kraftd.core.node import RaftNode
from kraftd.core.snapshots import Snapshot, log_agrees, read_snapshot
from kraftd.core.types import NO_LEADER, ElectionState, Listener, ReplicaKey, VoterSet
from kraftd.storage import batches as batch_format
from kraftd.storage import snapshots
from kraftd.storage.bootstrap import read_bootstrap_checkpoint
from kraftd.storage.errors import StorageNotReadyError
from kraftd.storage.layout import NodeStorage
from kraftd.storage.log import MetadataLog
from kraftd.storage.quorum_state import NOT_VOTED, ElectionStateRecord
from kraftd.storage.uuids import ZERO_UUID
from kwire.errors import KraftError

log = logging.getLogger("kraftd.storage")

DiskEffect = (
    PersistElectionState | TruncateLog | AppendBatches | WriteSnapshot | InstallSnapshot | DeleteLogBefore
)


@dataclass(frozen=True, slots=True)
class QuorumSetup:
    """Who the voters are and how to reach them."""

    voters: VoterSet
    endpoints: dict[int, tuple[Endpoint, ...]]
    kraft_version: int


def quorum_setup(config: KraftConfig, storage: NodeStorage) -> QuorumSetup:
    """Static ``controller.quorum.voters`` win; else the bootstrap checkpoint written by ``format``; with
    neither the node refuses to start (StorageNotReadyError)."""
    if config.quorum_voters:
        name = config.controller_listener_names[0]
        return QuorumSetup(
            VoterSet(
                tuple(ReplicaKey(v.node_id) for v in config.quorum_voters),
                tuple((v.node_id, (Listener(name, v.host, v.port),)) for v in config.quorum_voters),
            ),
            {v.node_id: (Endpoint(name, v.host, v.port),) for v in config.quorum_voters},
            0,
        )
    path = storage.bootstrap_checkpoint
    version, voters = read_bootstrap_checkpoint(path) if path is not None else (1, [])
    if not voters and not config.bootstrap_servers:
        raise StorageNotReadyError(
            f"{storage.log_dir} holds no voter set (formatted with --no-initial-controllers?) and neither "
            "controller.quorum.voters nor controller.quorum.bootstrap.servers is set: a joining controller "
            "needs controller.quorum.bootstrap.servers to find the quorum's leader."
        )
    # With no voter set (--no-initial-controllers) the node starts as an observer: it learns the voters from
    # the leader's log and waits to be added (KIP-853).
    return QuorumSetup(
        VoterSet(
            tuple(ReplicaKey(v.node_id, v.directory_id) for v in voters),
            tuple((v.node_id, tuple(Listener(e.name, e.host, e.port) for e in v.endpoints)) for v in voters),
        ),
        {v.node_id: v.endpoints for v in voters},
        version,
    )


def load_snapshot_and_log(storage: NodeStorage) -> tuple[Snapshot | None, ReplicatedLog]:
    """Contract 4."""
    snapshots.delete_partial(storage.partition_dir)
    snap = snapshots.latest_snapshot(storage.partition_dir)
    core = load_core_log(storage.log)
    if snap is not None and not log_agrees(core, snap.snapshot_id):
        storage.log.reset_to(snap.snapshot_id.offset)
        core = ReplicatedLog(snap.snapshot_id.offset, snap.snapshot_id.epoch)
    return snap, core


def older_snapshots(storage: NodeStorage, latest: Snapshot | None, log_start: int) -> list[Snapshot]:
    """Contract 4: the complete snapshot files in [log start, latest) (an unusable one is skipped)."""
    pdir = storage.partition_dir
    snapshots.delete_snapshots_before(pdir, log_start, fsync=storage.log.fsync_enabled)
    if latest is None:
        return []
    out = []
    for sid in snapshots.list_snapshots(pdir):
        if sid.offset < latest.snapshot_id.offset:
            try:
                out.append(read_snapshot(sid, (pdir / snapshots.snapshot_name(sid)).read_bytes()))
            except (OSError, KraftError) as exc:
                log.error("snapshot %s is unusable, not served: %s", sid, exc)
    return out


def open_core(
    cfg: KraftConfig,
    storage: NodeStorage,
    setup: QuorumSetup,
    quorum: QuorumConfig,
    rng: random.Random,
    now: int,
) -> RaftNode:
    """Contract 5."""
    snapshot, core_log = load_snapshot_and_log(storage)
    if snapshot is not None:
        log.info("loaded snapshot %s", snapshot.snapshot_id)
    return RaftNode(
        local=ReplicaKey(cfg.node_id, storage.meta.directory_id),
        voters=setup.voters,
        config=quorum,
        rng=rng,
        cluster_id=storage.meta.cluster_id,
        election_state=to_core_state(storage.election_state),
        log=core_log,
        snapshot=snapshot,
        retained=older_snapshots(storage, snapshot, core_log.start_offset),
        now_ms=now,
        kraft_version=setup.kraft_version,
    )


def load_core_log(disk: MetadataLog) -> ReplicatedLog:
    core = ReplicatedLog(start_offset=disk.start_offset)
    for data in disk.batches():
        h = batch_format.peek(data)
        assert h is not None
        core.append(LogBatch(h.base_offset, h.last_offset, h.epoch, data, h.is_control))
    return core


def to_core_state(rec: ElectionStateRecord | None) -> ElectionState | None:
    if rec is None:
        return None
    voted = None
    if rec.voted_id != NOT_VOTED:
        voted = ReplicaKey(
            rec.voted_id, None if rec.voted_directory_id == ZERO_UUID else rec.voted_directory_id
        )
    return ElectionState(max(rec.leader_epoch, 0), rec.leader_id, voted)


def to_record(state: ElectionState, setup: QuorumSetup) -> ElectionStateRecord:
    voted_id = state.voted_key.id if state.voted_key is not None else NOT_VOTED
    voted_dir: uuid.UUID = ZERO_UUID
    if state.voted_key is not None and isinstance(state.voted_key.directory_id, uuid.UUID):
        voted_dir = state.voted_key.directory_id
    return ElectionStateRecord(
        leader_epoch=state.epoch,
        leader_id=state.leader_id if state.leader_id >= 0 else NO_LEADER,
        voted_id=voted_id,
        voted_directory_id=voted_dir,
        data_version=1 if setup.kraft_version >= 1 else 0,
        current_voters=() if setup.kraft_version >= 1 else setup.voters.ids,
    )


class DiskMirror:
    """Executes the core's storage effects against a NodeStorage (contract 3)."""

    def __init__(self, storage: NodeStorage, setup: QuorumSetup) -> None:
        self.storage = storage
        self.setup = setup
        self.written: set[OffsetAndEpoch] = set()  # snapshot files already written durably (contract 3)

    @property
    def log(self) -> MetadataLog:
        return self.storage.log

    def apply(self, effect: DiskEffect) -> None:
        if isinstance(effect, AppendBatches):  # the common case first: no path built per append
            self.storage.log.append(b"".join(b.data for b in effect.batches))
            return
        pdir = self.storage.partition_dir
        fsync = self.storage.log.fsync_enabled
        if isinstance(effect, WriteSnapshot):
            if effect.snapshot.snapshot_id in self.written:  # by the snapshot writer, off the loop
                self.written.discard(effect.snapshot.snapshot_id)
                return
            snapshots.write_snapshot(pdir, effect.snapshot, fsync=fsync)
        elif isinstance(effect, InstallSnapshot):
            snapshots.write_snapshot(pdir, effect.snapshot, fsync=fsync)
            self.storage.log.reset_to(effect.snapshot.snapshot_id.offset)
            snapshots.delete_snapshots_before(pdir, effect.snapshot.snapshot_id.offset, fsync=fsync)
        elif isinstance(effect, DeleteLogBefore):
            self.storage.log.delete_before(effect.offset)
            snapshots.delete_snapshots_before(pdir, effect.offset, fsync=fsync)
        elif isinstance(effect, PersistElectionState):
            started = time.perf_counter()
            self.storage.quorum_state.write(to_record(effect.state, self.setup))
            if log.isEnabledFor(logging.DEBUG):
                took = (time.perf_counter() - started) * 1000
                log.debug("persisted election state %s in %.1f ms", effect.state, took)
        elif isinstance(effect, TruncateLog):
            self.storage.log.truncate_to(effect.offset)
