"""Controller operations answer through a ControllerResult (issue 23; kraftd.controller.result,
kraftd.shell.controller.glue contract 5, kraftd.shell.apis.table contract 4).

1. The router sends each API of a controller part straight to the one method the table names for it, with the
   request, its version and the principal; no part has a second dispatch by api key.
2. ControllerGlue.run: a write that fails (this node is not the active controller) answers ``failed(code)``,
   NOT_CONTROLLER on each entry validation accepted, refused entries keeping their own error, and logs no
   "done" line; records that commit answer ``response`` and log the done lines; notes are logged either way.
"""

from __future__ import annotations

import asyncio
import logging
import random
from types import SimpleNamespace
from typing import Any

import pytest

from generated.create_topics_request import CreatableTopic, CreateTopicsRequest
from generated.messages import API_SPECS
from generated.no_op_record import NoOpRecord
from generated.request_header import RequestHeader
from kraftd.controller.machine import MetadataController
from kraftd.controller.ops import topics as topic_ops
from kraftd.controller.result import ControllerResult
from kraftd.shell.apis import table
from kraftd.shell.apis.routing import RequestRouter
from kraftd.shell.controller.broker_rpcs import ControllerRpcs
from kraftd.shell.controller.glue import ControllerGlue
from kraftd.shell.controller.partition_admin import ControllerOps
from kraftd.shell.controller.security_admin import ControllerSecurity
from kraftd.shell.controller.topic_admin import ControllerAdmin
from kwire.errors import ErrorCode
from tests.helpers.controller import cluster


class _Part:
    def __init__(self, calls: list[tuple[str, Any, int, str]]) -> None:
        self.calls = calls

    def __getattr__(self, name: str) -> Any:
        async def method(body: Any, version: int, principal: str) -> str:
            self.calls.append((name, body, version, principal))
            return name

        return method


def test_each_controller_api_reaches_the_one_method_the_table_names() -> None:
    """Invariant 1."""
    calls: list[tuple[str, Any, int, str]] = []

    async def settled() -> None:
        return None

    node: Any = SimpleNamespace(
        controller=SimpleNamespace(machine=SimpleNamespace(active=True), settled=settled)
    )
    node.rpcs = node.ctl_admin = node.ctl_ops = node.ctl_security = _Part(calls)
    router = RequestRouter(node)
    ops = {k: a for k, a in table.TABLE.items() if a.op}
    assert {a.part for a in ops.values()} == {
        table.Part.BROKERS,
        table.Part.TOPICS,
        table.Part.PARTITIONS,
        table.Part.SECURITY,
    }
    assert not {a.part for k, a in table.TABLE.items() if k not in ops} & {a.part for a in ops.values()}
    for key, api in sorted(ops.items()):
        body = API_SPECS[key].request()
        header = RequestHeader(request_api_key=key, request_api_version=api.versions[1], correlation_id=1)
        assert asyncio.run(router.handle(header, body, None)) == api.op  # type: ignore[arg-type]
        assert calls[-1] == (api.op, body, api.versions[1], "User:ANONYMOUS")
    assert len(calls) == len(ops) == 24
    for cls in (ControllerRpcs, ControllerAdmin, ControllerOps, ControllerSecurity):
        assert not hasattr(cls, "handle"), cls


def _glue(active: bool) -> ControllerGlue:
    machine = MetadataController(1, [])
    machine.committed = cluster(1)[0]  # one registered, unfenced broker
    if active:
        machine.become_leader(1, 0)
        assert machine.activation_records() == []

    async def append(values: list[bytes], on_range: Any = None) -> int:
        return 0

    node: Any = SimpleNamespace(config=SimpleNamespace(node_id=1), append=append)
    return ControllerGlue(node, machine)


@pytest.mark.parametrize("active", [False, True])
def test_run_writes_then_answers_or_maps_the_write_error(
    active: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """Invariant 2 with a result of one record: the active node's write commits, the other's is refused."""
    glue = _glue(active)
    result: ControllerResult[str] = ControllerResult(
        [NoOpRecord()],
        "response",
        lambda code: f"failed {code.name}",
        [("note %d", (1,))],
        [("done %d", (2,))],
    )
    with caplog.at_level(logging.INFO, logger="kraftd.controller"):
        out = asyncio.run(glue.run(result))
    lines = [r.getMessage() for r in caplog.records]
    if active:
        assert out == "response" and lines == ["note 1", "done 2"]
    else:
        assert out == "failed NOT_CONTROLLER" and lines == ["note 1"]


def test_create_topics_on_a_node_that_is_not_the_active_controller(caplog: pytest.LogCaptureFixture) -> None:
    """Invariant 2: the accepted topic answers NOT_CONTROLLER (-1 partitions), the refused one keeps its error."""
    glue = _glue(False)
    req = CreateTopicsRequest(
        topics=[
            CreatableTopic(name="ok", num_partitions=1, replication_factor=1),
            CreatableTopic(name="bad!", num_partitions=1, replication_factor=1),
        ]
    )
    result = topic_ops.create_topics(glue.machine.latest(), req, random.Random(1))
    assert [line[1][0] for line in result.done] == ["ok"]
    with caplog.at_level(logging.INFO, logger="kraftd.controller"):
        created = asyncio.run(glue.run(result))
    assert [(t.name, t.error_code, t.num_partitions) for t in created.topics] == [
        ("ok", ErrorCode.NOT_CONTROLLER, -1),
        ("bad!", ErrorCode.INVALID_TOPIC_EXCEPTION, -1),
    ]
    assert not [r for r in caplog.records if "created topic" in r.getMessage()]
