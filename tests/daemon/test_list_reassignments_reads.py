"""kraftd.shell.controller.partition_admin contract 2a: ListPartitionReassignments reads the committed image behind the read
barrier; a reassignment that is only in the leader's uncommitted view is not listed, and a leader the barrier
finds deposed answers with the barrier's error instead of its image."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from generated.elect_leaders_request import ElectLeadersRequest, TopicPartitions
from generated.list_partition_reassignments_request import ListPartitionReassignmentsRequest
from kraftd.controller.image import MetadataImage
from kraftd.controller.ops.partitions import elect_leaders_failed
from kraftd.shell.controller.partition_admin import ControllerOps
from kwire.errors import ErrorCode
from kwire.headers import decode_response, encode_response
from tests.helpers.controller import apply_records as _apply
from tests.helpers.controller import cluster as _cluster
from tests.helpers.controller import reassignment as _reassign
from tests.helpers.controller import topic as _topic


class _Reads:
    def __init__(self, code: int) -> None:
        self.code, self.calls = code, 0

    async def before_read(self) -> int:
        self.calls += 1
        return self.code


class _Machine:
    def __init__(self, committed: MetadataImage, uncommitted: MetadataImage) -> None:
        self.active, self.committed, self.uncommitted = True, committed, uncommitted

    def latest(self) -> MetadataImage:
        return self.uncommitted


def _ask(
    committed: MetadataImage, uncommitted: MetadataImage, code: int = ErrorCode.NONE
) -> tuple[Any, _Reads]:
    reads = _Reads(code)
    node: Any = SimpleNamespace(
        controller=SimpleNamespace(machine=_Machine(committed, uncommitted)), reads=reads
    )
    resp = asyncio.run(
        ControllerOps(node).list_reassignments(
            ListPartitionReassignmentsRequest(topics=None), 0, "User:ANONYMOUS"
        )
    )
    return resp, reads


def _images() -> tuple[MetadataImage, MetadataImage]:
    committed, _ = _cluster(3)
    _topic(committed, [1, 2], [1, 2], leader=1)
    uncommitted = committed.copy()
    records, (_, code, _) = _reassign(uncommitted, [2, 3])
    assert code == ErrorCode.NONE
    _apply(uncommitted, records)
    return committed, uncommitted


def test_an_uncommitted_reassignment_is_not_listed_until_committed() -> None:
    committed, uncommitted = _images()
    resp, reads = _ask(committed, uncommitted)
    assert (resp.error_code, resp.topics, reads.calls) == (ErrorCode.NONE, [], 1)
    resp, _ = _ask(uncommitted, uncommitted)  # once committed it is listed
    assert [(t.name, [p.partition_index for p in t.partitions]) for t in resp.topics] == [("t", [0])]


def test_a_leader_the_barrier_finds_deposed_does_not_answer_from_its_image() -> None:
    _, uncommitted = _images()
    resp, reads = _ask(uncommitted, uncommitted, ErrorCode.NOT_CONTROLLER)
    assert (resp.error_code, resp.topics, reads.calls) == (ErrorCode.NOT_CONTROLLER, [], 1)


@pytest.mark.parametrize("version", [0, 1, 2])
def test_a_refused_elect_leaders_encodes_at_every_version(version: int) -> None:
    """Contract 2b: v0 has no top-level error, so the refusal rides on each requested partition."""
    req = ElectLeadersRequest(
        election_type=0, topic_partitions=[TopicPartitions(topic="t", partitions=[0, 1])]
    )
    resp = elect_leaders_failed(req, version, ErrorCode.NOT_CONTROLLER)
    _, back = decode_response(encode_response(43, version, 7, resp), 43, version)
    codes = [p.error_code for r in back.replica_election_results for p in r.partition_result]
    assert codes == [ErrorCode.NOT_CONTROLLER] * 2
    assert back.error_code == (ErrorCode.NOT_CONTROLLER if version >= 1 else ErrorCode.NONE)
    empty = elect_leaders_failed(ElectLeadersRequest(topic_partitions=[]), version, ErrorCode.NOT_CONTROLLER)
    encode_response(43, version, 8, empty)  # the conformance probe's form: no partition, still encodable
