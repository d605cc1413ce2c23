"""kwire.authz contract 4a, kraftd.shell.apis.denials contract 2, kwire.server contract 8: topic and config requests
are authorized per entry, as Kafka's ControllerApis does. The authorized entries reach the handler; the refused
ones are answered TOPIC_AUTHORIZATION_FAILED (CLUSTER_AUTHORIZATION_FAILED for a cluster resource) in the same
response."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from generated.create_topics_request import CreatableTopic, CreateTopicsRequest
from generated.create_topics_response import CreatableTopicResult, CreateTopicsResponse
from generated.delete_topics_request import DeleteTopicsRequest, DeleteTopicState
from generated.describe_configs_request import DescribeConfigsRequest, DescribeConfigsResource
from generated.metadata_request import MetadataRequest
from kraftd.shell.apis import denials
from kraftd.shell.apis.table import RULE_BOOK
from kwire.authz import AclAuthorizer
from kwire.errors import ErrorCode
from kwire.framing import FrameDecoder, encode_frame
from kwire.headers import decode_response, encode_request
from kwire.server import KafkaServer
from tests.helpers.security import entry

ALICE = "User:alice"
DENIED = ErrorCode.TOPIC_AUTHORIZATION_FAILED


def _create(*names: str) -> CreateTopicsRequest:
    return CreateTopicsRequest(topics=[CreatableTopic(name=n) for n in names], timeout_ms=1000)


def test_denied_entries_name_each_refused_entry_in_request_order() -> None:
    only_b = AclAuthorizer(RULE_BOOK, frozenset(), lambda: [entry(op="CREATE", name="b")])
    assert only_b.denied_entries(ALICE, 19, "h", _create("a", "b", "c")) == {0, 2}
    assert (
        AclAuthorizer(RULE_BOOK, frozenset({ALICE})).denied_entries(ALICE, 19, "h", _create("a"))
        == frozenset()
    )
    cluster_create = AclAuthorizer(RULE_BOOK, frozenset(), lambda: [entry(op="CREATE")])
    assert cluster_create.denied_entries(ALICE, 19, "h", _create("a", "b")) == frozenset()
    # DeleteTopics: the names first, then the name/id pairs; an id alone needs DELETE on the cluster.
    delete = DeleteTopicsRequest(
        topic_names=["x"],
        topics=[
            DeleteTopicState(name="y", topic_id=uuid.uuid4()),
            DeleteTopicState(name=None, topic_id=uuid.uuid4()),
        ],
    )
    on_y = AclAuthorizer(RULE_BOOK, frozenset(), lambda: [entry(op="DELETE", name="y")])
    assert on_y.denied_entries(ALICE, 20, "h", delete) == {0, 2}
    configs = DescribeConfigsRequest(
        resources=[DescribeConfigsResource(2, "t", None), DescribeConfigsResource(4, "", None)]
    )
    on_t = AclAuthorizer(RULE_BOOK, frozenset(), lambda: [entry(op="DESCRIBE_CONFIGS", name="t")])
    assert on_t.denied_entries(ALICE, 32, "h", configs) == {1}
    assert on_t.denied_entries(ALICE, 3, "h", MetadataRequest(topics=[])) is None  # not decided per entry


def test_split_and_merge_keep_every_entry_exactly_once() -> None:
    req = _create("a", "b", "c")
    assert denials.split(19, req, frozenset({0, 1, 2})) is None  # refused whole
    parts = denials.split(19, req, frozenset({1}))
    assert parts is not None
    allowed, refused = parts
    assert [t.name for t in allowed.topics] == ["a", "c"] and [t.name for t in refused.topics] == ["b"]
    assert [t.name for t in req.topics] == ["a", "b", "c"]  # the request itself is not changed
    served = CreateTopicsResponse(topics=[CreatableTopicResult(name=n) for n in ("a", "c")])
    merged = denials.merge(19, served, denials.denied(19, refused, 7))
    assert [(t.name, t.error_code) for t in merged.topics] == [("a", 0), ("c", 0), ("b", DENIED)]
    delete = DeleteTopicsRequest(
        topic_names=["x", "z"], topics=[DeleteTopicState(name="y", topic_id=uuid.uuid4())]
    )
    kept, dropped = denials.split(20, delete, frozenset({1})) or (None, None)
    assert (kept.topic_names, [t.name for t in kept.topics]) == (["x"], ["y"])
    assert (dropped.topic_names, dropped.topics) == (["z"], [])


def test_listener_serves_the_authorized_topics_and_refuses_the_rest() -> None:
    seen: list[list[str]] = []

    async def handler(header: Any, request: Any, info: Any) -> Any:
        seen.append([t.name for t in request.topics])
        return CreateTopicsResponse(topics=[CreatableTopicResult(name=t.name) for t in request.topics])

    authorizer = AclAuthorizer(
        RULE_BOOK, frozenset(), lambda: [entry(principal="User:ANONYMOUS", op="CREATE", name="ok")]
    )

    async def main() -> tuple[Any, Any]:
        async with KafkaServer(
            handler,
            authorizer=authorizer,
            denied=denials.denied,
            per_entry=(denials.split, denials.merge),
        ) as srv:
            reader, writer = await asyncio.open_connection("127.0.0.1", srv.port)
            writer.write(encode_frame(encode_request(19, 7, 1, "t", _create("ok", "no"))))
            writer.write(encode_frame(encode_request(19, 7, 2, "t", _create("no"))))
            decoder, frames = FrameDecoder(), []
            while len(frames) < 2:
                frames += decoder.feed(await reader.read(65536))
            writer.close()
            return decode_response(frames[0], 19, 7)[1], decode_response(frames[1], 19, 7)[1]

    mixed, refused = asyncio.run(asyncio.wait_for(main(), 20))
    assert seen == [["ok"]]  # the refused topic never reached the handler; the all-refused request neither
    assert [(t.name, t.error_code) for t in mixed.topics] == [("ok", 0), ("no", DENIED)]
    assert [(t.name, t.error_code) for t in refused.topics] == [("no", DENIED)]
