"""kraftd.shell.controller_ops contract 2a: ListPartitionReassignments reads the committed image behind the read
barrier; a reassignment that is only in the leader's uncommitted view is not listed, and a leader the barrier
finds deposed answers with the barrier's error instead of its image."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from generated.list_partition_reassignments_request import ListPartitionReassignmentsRequest
from kraftd.controller.image import MetadataImage
from kraftd.shell.controller_ops import LIST_REASSIGNMENTS, ControllerOps
from kwire.errors import ErrorCode
from tests.controller.test_lifecycle import _apply, _cluster
from tests.controller.test_operations import _reassign, _topic


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
        ControllerOps(node).handle(LIST_REASSIGNMENTS, ListPartitionReassignmentsRequest(topics=None))
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
