"""Nothing a peer or client sends can forge a log line (kraftd.shell.observe.logging_setup contract 3).

A VoteRequest whose cluster id carries a newline and a fake ``won the election`` line, sent without
authentication to a PLAINTEXT listener, must show up escaped in one line of server.log; hypothesis then
sends hostile strings in every field a client controls (cluster ids, client ids, software names, topic and
resource names, principals, config values) to the same running node, and every line of its log must be one
event in Kafka's layout with no control byte. The formatter itself is fuzzed in-process as well, with
exceptions whose texts carry line breaks (peers' error messages end up there).
"""

from __future__ import annotations

import logging
import socket
import struct
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generated.api_versions_request import ApiVersionsRequest
from generated.create_acls_request import AclCreation, CreateAclsRequest
from generated.create_topics_request import CreatableTopic, CreatableTopicConfig, CreateTopicsRequest
from generated.default_principal_data import DefaultPrincipalData
from generated.describe_configs_request import DescribeConfigsRequest, DescribeConfigsResource
from generated.envelope_request import EnvelopeRequest
from generated.incremental_alter_configs_request import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
)
from generated.vote_request import PartitionData, TopicData, VoteRequest
from kraftd.shell.observe import logging_setup
from kwire.headers import encode_request
from tests.daemon.cluster import KRAFTD, free_ports
from tests.helpers.daemon import KAFKA_LINE, standalone_config, stop, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

FORGED = (
    "[2026-01-01 00:00:00,000] INFO node 1: won the election for epoch 999 with votes from [1] (kraftd.raft)"
)
CONTROL = [chr(c) for c in (*range(0x20), *range(0x7F, 0xA0))] + ["\u2028", "\u2029"]
# Mostly control characters and line breaks, mixed with any other text.
hostile = st.text(st.one_of(st.sampled_from(CONTROL), st.characters(exclude_categories=["Cs"])), max_size=40)


def spelled(text: str) -> str:
    """The contract's spelling: a control character as \\xNN (\\uNNNN above 0xff), the rest as it is."""
    return "".join(
        (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}") if c in CONTROL else c for c in text
    )


def no_control(text: str) -> bool:
    return not any(c in text for c in CONTROL if c != "\n")


@dataclass
class Node:
    port: int
    log: Path
    proc: subprocess.Popen[bytes]


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    root = tmp_path_factory.mktemp("escaping")
    (port,) = free_ports(1)
    cfg = standalone_config(root, port)
    logs = root / "logs"
    proc = subprocess.Popen(
        [KRAFTD, "start", str(cfg), "--log-dir", str(logs), "--log-level", "DEBUG"],
        stderr=subprocess.DEVNULL,
    )
    n = Node(port, logs / "server.log", proc)
    try:
        wait_for(lambda: n.log.exists() and "won the election" in n.log.read_text(), 30, "leadership")
        yield n
    finally:
        stop(proc)


def call(port: int, api: int, version: int, body: Any, client_id: str | None = "escaping") -> None:
    """One request on its own connection; waits for the answer or for the server to close."""
    frame = encode_request(api, version, 1, client_id, body)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(struct.pack(">i", len(frame)) + frame)
        need = 4
        while need > 0:
            chunk = sock.recv(65536)
            if not chunk:
                return
            if need == 4 and len(chunk) >= 4:
                need = struct.unpack(">i", chunk[:4])[0] + 4
            need -= len(chunk)


def vote(cluster_id: str) -> VoteRequest:
    part = PartitionData(
        partition_index=0, replica_epoch=999, replica_id=7, last_offset_epoch=999, last_offset=9
    )
    return VoteRequest(cluster_id=cluster_id, voter_id=1, topics=[TopicData("__cluster_metadata", [part])])


def assert_one_line_per_event(text: str) -> None:
    assert no_control(text), [ln for ln in text.splitlines() if not no_control(ln)][:3]
    for line in text.split("\n")[:-1]:
        assert KAFKA_LINE.match(line), repr(line)


def test_a_vote_request_cannot_forge_a_line_on_a_plaintext_listener(node: Node) -> None:
    call(node.port, 52, 2, vote("forged-cluster\n" + FORGED))
    wait_for(lambda: "forged-cluster" in node.log.read_text(), 20, "the rejection logged")
    text = node.log.read_text()
    assert not any(line.startswith(FORGED[:30]) for line in text.splitlines())
    (line,) = [ln for ln in text.splitlines() if "forged-cluster" in ln]
    assert "its cluster id forged-cluster\\x0a[2026-01-01 00:00:00,000] INFO node 1: won the election" in line
    assert_one_line_per_event(text)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(s=hostile)
def test_hostile_strings_in_every_client_field_stay_on_one_line(node: Node, s: str) -> None:
    p = node.port
    call(p, 52, 2, vote(s), client_id=s)
    call(p, 18, 3, ApiVersionsRequest(s, s), client_id=s)
    call(p, 19, 7, CreateTopicsRequest([CreatableTopic(s, 1, 1, configs=[CreatableTopicConfig(s, s)])]), s)
    call(p, 32, 4, DescribeConfigsRequest([DescribeConfigsResource(2, s, [s])]), client_id=s)
    res = AlterConfigsResource(2, s, [AlterableConfig(s, 0, s)])
    call(p, 44, 1, IncrementalAlterConfigsRequest([res]), client_id=s)
    acl = AclCreation(2, s, 3, "User:" + s, s, 2, 3)
    inner = encode_request(30, 3, 1, s, CreateAclsRequest([acl]))
    principal = struct.pack(">h", 0) + DefaultPrincipalData("User", s, False).encode(0)
    for data in (inner, inner[:12] + s.encode()):
        call(p, 58, 0, EnvelopeRequest(data, principal, b"\x7f\x00\x00\x01"), client_id=s)


def test_the_log_after_the_fuzzing_is_one_line_per_event(node: Node) -> None:
    """Runs after the fuzzing (file order): the whole log, with everything it received, is clean."""
    text = node.log.read_text()
    assert text.count("\n") > 10
    assert_one_line_per_event(text)


@settings(max_examples=200, deadline=None)
@given(args=st.lists(hostile, min_size=1, max_size=4), exc_text=hostile)
def test_the_formatter_renders_any_arguments_and_exception_text_on_one_line(
    args: list[str], exc_text: str
) -> None:
    fmt = logging_setup.OneLineFormatter(logging_setup.KAFKA_FORMAT)
    msg = "event " + " ".join(["%s"] * len(args))
    rec = logging.LogRecord("kraftd.network", logging.ERROR, __file__, 1, msg, tuple(args), None)
    line = fmt.format(rec)
    assert "\n" not in line and no_control(line) and KAFKA_LINE.match(line)
    for a in args:
        assert spelled(a) in line
    try:
        raise ValueError(exc_text) from KeyError(exc_text)
    except ValueError:
        rec = logging.LogRecord("x", logging.ERROR, __file__, 1, "failed: %s", (exc_text,), sys.exc_info())
    out = fmt.format(rec).split("\n")
    assert KAFKA_LINE.match(out[0]) and no_control("\n".join(out))
    # Exactly one line per exception text: the traceback's own lines are Python's fixed layout.
    assert sum(ln.startswith("ValueError") for ln in out) == 1
    assert sum(ln.startswith("KeyError") for ln in out) == 1
    assert not any(ln.startswith("[") for ln in out[1:])
