"""Eligible Leader Replicas (KIP-966) kept by the controller, as Kafka 4.3.1's PartitionChangeBuilder keeps them.

Images are built only by replaying records; every change the controller proposes is replayed back. The cluster
has three unfenced brokers and one topic with replicas [1, 2, 3]; with eligible.leader.replicas.version 1 the
cluster-level min.insync.replicas is 2 (the ConfigRecord written at bootstrap)."""

from __future__ import annotations

from typing import Any

from generated.alter_configs_request import AlterableConfig, AlterConfigsRequest, AlterConfigsResource
from generated.broker_registration_request import Feature
from generated.config_record import ConfigRecord
from generated.feature_level_record import FeatureLevelRecord
from generated.partition_change_record import PartitionChangeRecord
from kraftd.controller import brokers, configs, elr
from kraftd.controller.features import ELR_VERSION
from kraftd.controller.image import MetadataImage
from kwire.errors import ErrorCode
from tests.helpers.controller import CLUSTER, TID
from tests.helpers.controller import alter_isr as _alter_isr
from tests.helpers.controller import apply_records as _apply
from tests.helpers.controller import cluster as _cluster
from tests.helpers.controller import heartbeat as _hb
from tests.helpers.controller import partition as _p
from tests.helpers.controller import registration as _reg
from tests.helpers.controller import topic as _topic


def _elr_cluster(level: int = 1, min_isr: int = 2) -> tuple[MetadataImage, brokers.Heartbeats]:
    image, hb = _cluster(3)
    _apply(
        image,
        [
            FeatureLevelRecord(name=ELR_VERSION, feature_level=level),
            ConfigRecord(resource_type=4, resource_name="", name="min.insync.replicas", value=str(min_isr)),
        ],
    )
    _topic(image, [1, 2, 3], [1, 2, 3], leader=1)
    return image, hb


def _changes(records: list[Any]) -> list[PartitionChangeRecord]:
    return [r for r in records if isinstance(r, PartitionChangeRecord)]


def _fence(image: MetadataImage, bid: int) -> list[PartitionChangeRecord]:
    records = brokers.fence(image, bid)
    _apply(image, records)
    return _changes(records)


def _check_disjoint(image: MetadataImage) -> None:
    p = _p(image)
    assert not set(p.elr) & set(p.isr) and set(p.elr) <= set(p.replicas)
    assert p.leader == -1 or p.leader in p.isr


def test_isr_shrink_below_min_isr_keeps_removed_replicas_eligible() -> None:
    image, _ = _elr_cluster()
    (first,) = _fence(image, 3)
    # ISR [1, 2] is still at min ISR 2: no ELR, and the ELR fields stay "unchanged" (null), not [].
    assert first.isr == [1, 2] and first.eligible_leader_replicas is None and first.last_known_elr is None
    (second,) = _fence(image, 2)
    assert second.isr == [1] and second.eligible_leader_replicas == [2]
    p = _p(image)
    assert (p.isr, p.elr, p.leader) == ([1], [2], 1)
    epoch = p.leader_epoch
    # The last ISR member leaves too: the ISR may now be empty, both stay eligible, the last leader is recorded.
    (third,) = _fence(image, 1)
    assert third.isr == [] and third.leader == -1
    assert sorted(third.eligible_leader_replicas or []) == [1, 2] and third.last_known_elr == [1]
    p = _p(image)
    assert (p.isr, sorted(p.elr), p.last_known_elr, p.leader_epoch) == ([], [1, 2], [1], epoch + 1)
    _check_disjoint(image)


def test_alter_partition_shrink_then_expand_clears_elr() -> None:
    image, _ = _elr_cluster()
    records, error, results = _alter_isr(image, 1, [1])
    assert error == ErrorCode.NONE and results[0][2] == ErrorCode.NONE
    (rec,) = records
    assert rec.isr == [1] and rec.eligible_leader_replicas == [2, 3] and rec.leader == -2
    _apply(image, records)
    assert (_p(image).isr, _p(image).elr) == ([1], [2, 3])
    assert results[0][3].elr == [2, 3]  # the answered state is the replayed one
    # Back at min ISR: ELR emptied, encoded as an empty list (a change), not null.
    records, error, _ = _alter_isr(image, 1, [1, 2])
    (rec,) = records
    assert rec.isr == [1, 2] and rec.eligible_leader_replicas == []
    _apply(image, records)
    assert (_p(image).isr, _p(image).elr) == ([1, 2], [])
    _check_disjoint(image)


def test_leader_elected_from_elr_when_isr_is_empty() -> None:
    image, _ = _elr_cluster()
    records, _, _ = _alter_isr(image, 1, [1])
    _apply(image, records)
    # The leader, sole ISR member, is fenced: the ISR would be empty, so an ELR member (2, first in replica
    # order) leads, cleanly: the ISR becomes [2], it leaves the ELR, the recovery state is untouched.
    (rec,) = _fence(image, 1)
    assert rec.leader == 2 and rec.isr == [2] and rec.leader_recovery_state == -1
    assert sorted(rec.eligible_leader_replicas or []) == [1, 3]
    p = _p(image)
    assert (p.leader, p.isr, sorted(p.elr), p.leader_recovery_state) == (2, [2], [1, 3], 0)
    _check_disjoint(image)


def test_unfenced_elr_member_leads_a_leaderless_partition() -> None:
    image, hb = _elr_cluster()
    for bid in (3, 2, 1):
        _fence(image, bid)
    p = _p(image)
    assert (p.leader, p.isr, sorted(p.elr), p.last_known_elr) == (-1, [], [1, 2], [1])
    # Broker 2 (in the ELR, not the last leader) comes back: it is elected from the ELR; LastKnownElr is emptied.
    out = brokers.heartbeat(image, _hb(image, 2), hb, 0)
    (rec,) = _changes(out.records)
    assert (
        rec.leader == 2
        and rec.isr == [2]
        and rec.eligible_leader_replicas == [1]
        and rec.last_known_elr == []
    )
    _apply(image, out.records)
    p = _p(image)
    assert (p.leader, p.isr, p.elr, p.last_known_elr) == (2, [2], [1], [])
    _check_disjoint(image)


def test_last_known_leader_comes_back_when_the_elr_is_gone() -> None:
    image, hb = _elr_cluster()
    for bid in (3, 2, 1):
        _fence(image, bid)
    epoch = _p(image).partition_epoch
    _apply(image, [_clear_all()])  # e.g. min.insync.replicas changed: every ELR and LastKnownElr emptied
    p = _p(image)
    # Replayed as Kafka does: a partition change of its own (partition epoch + 1); a second clear changes nothing.
    assert (p.elr, p.last_known_elr, p.partition_epoch) == ([], [], epoch + 1)
    _apply(image, [_clear_all()])
    assert _p(image).partition_epoch == epoch + 1
    # Nothing left to elect from; a fresh partition state with only LastKnownElr = [1] elects 1 uncleanly.
    _apply(
        image,
        [PartitionChangeRecord(partition_id=0, topic_id=TID, last_known_elr=[1])],
    )
    out = brokers.heartbeat(image, _hb(image, 1), hb, 0)
    (rec,) = _changes(out.records)
    assert rec.leader == 1 and rec.isr == [1] and rec.leader_recovery_state == 1 and rec.last_known_elr == []
    # A broker that never led stays out: unfencing 3 elects nobody.
    image2, hb2 = _elr_cluster()
    for bid in (3, 2, 1):
        _fence(image2, bid)
    _apply(image2, [_clear_all(), PartitionChangeRecord(partition_id=0, topic_id=TID, last_known_elr=[1])])
    assert _changes(brokers.heartbeat(image2, _hb(image2, 3), hb2, 0).records) == []


def _clear_all() -> Any:
    from generated.clear_elr_record import ClearElrRecord

    return ClearElrRecord(topic_name="")


def _reg_elr(bid: int, inc: int, previous_epoch: int = -1) -> Any:
    req = _reg(bid, inc=inc)
    req.features = [
        *req.features,
        Feature(name=ELR_VERSION, min_supported_version=0, max_supported_version=1),
    ]
    req.previous_broker_epoch = previous_epoch
    return req


def test_unclean_shutdown_registration_leaves_the_elr() -> None:
    image, hb = _elr_cluster()
    records, _, _ = _alter_isr(image, 1, [1])
    _apply(image, records)
    assert _p(image).elr == [2, 3]
    # Broker 3 restarts after a clean shutdown (PreviousBrokerEpoch = its registered epoch): it stays eligible.
    clean = brokers.register(
        image, _reg_elr(3, inc=7, previous_epoch=image.brokers[3].epoch), CLUSTER, hb, 60_000
    )
    assert clean.error == ErrorCode.NONE and _changes(clean.records) == []
    # Broker 2 restarts after an unclean shutdown (no previous epoch): it may have lost data, so it leaves the ELR.
    unclean = brokers.register(image, _reg_elr(2, inc=8), CLUSTER, hb, 60_000)
    (rec,) = _changes(unclean.records)
    assert rec.eligible_leader_replicas == [3] and rec.isr is None and rec.leader == -2
    _apply(image, unclean.records)
    assert (_p(image).isr, _p(image).elr) == ([1], [3])
    # The same incarnation registering again changes no partition.
    again = brokers.register(image, _reg_elr(2, inc=8), CLUSTER, hb, 60_000)
    assert _changes(again.records) == []


def test_unclean_shutdown_of_an_isr_member_does_not_make_it_eligible() -> None:
    image, hb = _elr_cluster()
    records, _, _ = _alter_isr(image, 1, [1, 2])
    _apply(image, records)
    # A clean restart of ISR member 2 takes it out of the ISR (below min ISR 2), and it stays eligible...
    epoch = image.brokers[2].epoch
    (clean,) = _changes(
        brokers.register(image, _reg_elr(2, inc=9, previous_epoch=epoch), CLUSTER, hb, 60_000).records
    )
    assert clean.isr == [1] and clean.eligible_leader_replicas == [2]
    # ...an unclean one takes it out of the ISR without making it eligible (3 left the ISR earlier: not eligible).
    out = brokers.register(image, _reg_elr(2, inc=9), CLUSTER, hb, 120_000)
    assert out.error == ErrorCode.NONE
    (rec,) = _changes(out.records)
    assert rec.isr == [1] and rec.eligible_leader_replicas is None
    _apply(image, out.records)
    assert _p(image).elr == []


def test_unclean_election_empties_the_elr() -> None:
    image, hb = _elr_cluster()
    _apply(
        image,
        [
            ConfigRecord(
                resource_type=2, resource_name="t", name="unclean.leader.election.enable", value="true"
            )
        ],
    )
    for bid in (3, 2, 1):
        _fence(image, bid)
    assert (_p(image).isr, sorted(_p(image).elr)) == ([], [1, 2])
    # 3 comes back: not in the ELR nor the last leader, but the topic allows unclean elections. It leads with the
    # ISR forced to itself, the leader recovering, and the ELR (and LastKnownElr) emptied.
    out = brokers.heartbeat(image, _hb(image, 3), hb, 0)
    (rec,) = _changes(out.records)
    assert (rec.leader, rec.isr, rec.leader_recovery_state) == (3, [3], 1)
    assert rec.eligible_leader_replicas == [] and rec.last_known_elr == []
    _apply(image, out.records)
    _check_disjoint(image)


def test_nothing_changes_at_elr_version_0() -> None:
    image, hb = _elr_cluster(level=0)
    changes = [_fence(image, bid) for bid in (3, 2, 1)]
    for (rec,) in changes:
        assert rec.eligible_leader_replicas is None and rec.last_known_elr is None
    p = _p(image)
    # The old rule: the ISR never shrinks to empty, no ELR is kept.
    assert (p.isr, p.elr, p.last_known_elr, p.leader) == ([1], [], [], -1)
    records, _, _ = _alter_isr(_elr_cluster(level=0)[0], 1, [1])
    assert records[0].eligible_leader_replicas is None
    out = brokers.register(image, _reg(2, inc=5), CLUSTER, hb, 60_000)
    assert all(r.eligible_leader_replicas is None for r in _changes(out.records))


def test_effective_min_isr_and_hash_order() -> None:
    image, _ = _elr_cluster(min_isr=5)
    assert elr.min_isr(image, "t") == 3  # capped at the replication factor
    _apply(image, [ConfigRecord(resource_type=2, resource_name="t", name="min.insync.replicas", value="1")])
    assert elr.min_isr(image, "t") == 1  # the topic's own config wins
    # java.util.HashSet of Integers iterates by (hash ^ hash >>> 16) & (capacity - 1), ties in insertion order.
    assert elr.hash_order([1, 16]) == [16, 1]
    assert elr.hash_order([3, 1, 2]) == [1, 2, 3]
    assert elr.hash_order([17, 1]) == [17, 1] and elr.hash_order([1, 17]) == [1, 17]
    assert elr.hash_order([65536, 2]) == [65536, 2]  # 65536 spreads to bucket 1


def _incremental(image: MetadataImage, rtype: int, name: str, op: int, value: str | None) -> Any:
    from generated.incremental_alter_configs_request import (
        AlterableConfig,
        AlterConfigsResource,
        IncrementalAlterConfigsRequest,
    )

    req = IncrementalAlterConfigsRequest(
        resources=[
            AlterConfigsResource(
                resource_type=rtype,
                resource_name=name,
                configs=[AlterableConfig(name="min.insync.replicas", config_operation=op, value=value)],
            )
        ]
    )
    records, results = configs.incremental_alter_configs(image, req)
    return records, results[0][2:]


def test_min_isr_config_changes_clear_the_elr() -> None:
    image, _ = _elr_cluster()
    records, _, _ = _alter_isr(image, 1, [1])
    _apply(image, records)
    assert _p(image).elr == [2, 3]
    # A topic's min ISR changes: its ELRs were chosen against the old minimum, so a ClearElrRecord follows.
    records, (code, _) = _incremental(image, 2, "t", 0, "1")
    assert code == ErrorCode.NONE
    assert [type(r).__name__ for r in records] == ["ConfigRecord", "ClearElrRecord"] and records[
        1
    ].topic_name == "t"
    _apply(image, records)
    assert (_p(image).elr, elr.min_isr(image, "t")) == ([], 1)
    # The cluster default changes: every topic is cleared (topic name "").
    records, (code, _) = _incremental(image, 4, "", 0, "3")
    assert code == ErrorCode.NONE and records[-1].topic_name == ""
    # A broker-level value or removing the cluster default is refused while ELR is on, also by AlterConfigs.
    for rtype, name, op, value in ((4, "1", 0, "2"), (4, "", 1, None)):
        records, (code, message) = _incremental(image, rtype, name, op, value)
        assert records == [] and code == ErrorCode.INVALID_CONFIG and "while ELR is enabled" in message
    req = AlterConfigsRequest(
        resources=[
            AlterConfigsResource(
                resource_type=4,
                resource_name="1",
                configs=[AlterableConfig(name="min.insync.replicas", value="2")],
            )
        ]
    )
    records, results = configs.alter_configs(image, req)
    assert records == [] and results[0][2] == ErrorCode.INVALID_CONFIG
    # At eligible.leader.replicas.version 0 none of this applies.
    image0, _ = _elr_cluster(level=0)
    records, (code, _) = _incremental(image0, 4, "1", 0, "2")
    assert code == ErrorCode.NONE and [type(r).__name__ for r in records] == ["ConfigRecord"]
