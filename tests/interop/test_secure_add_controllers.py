"""KIP-853 on secured controller listeners: a kraftd ``--standalone`` quorum whose controller listener is SSL (mutual
TLS), SASL_PLAINTEXT (PLAIN) or SASL_SSL (SCRAM-SHA-256), between controllers and for clients alike, grows to three
voters (a kraftd and, where it can authenticate its peers, a Kafka 4.3.1 controller join) and shrinks back to one with Kafka's ``kafka-metadata-quorum`` and kraftd's
``kraft-metadata-quorum`` taking turns. Each
``add-controller --command-config`` file is the joining controller's own properties plus the client's security
properties, as Kafka's tool expects. The joining observers fetch from the leader, and the leader's new majority
commits, over the secured listener only (it is the only listener). A client without TLS, or with a wrong password,
fails with a short error and a nonzero exit, and the voter set stays as it was."""

from __future__ import annotations

import asyncio
import functools
import time
from pathlib import Path

import pytest

from kraftd.security import PROTOCOLS
from kraftd.testing.broker_load import metadata_records
from kwire.quorum_client import fetch_quorum
from kwire.sasl import SaslClientConfig
from kwire.tls import TlsSettings, client_context
from tests.helpers.interop import added_line, format_node, kafkas, ours, remove_args, retried, wait_voters
from tests.interop.kafka import MixedQuorum, Node, ToolResult, classpath
from tests.security.certs import Pki

pytestmark = [pytest.mark.interop, pytest.mark.slow, pytest.mark.timeout(300)]

REGISTER_CONTROLLER_RECORD = 27


def jaas(module: str, user: str, password: str, users: str = "") -> str:
    return (
        f'org.apache.kafka.common.security.{module} required username="{user}" password="{password}"{users};'
    )


PLAIN = "plain.PlainLoginModule"
SCRAM = "scram.ScramLoginModule"
USERS = ' user_admin="admin-secret" user_alice="alice-secret"'


def tls(pki: Pki) -> tuple[dict[str, str], dict[str, str]]:
    """(the controllers' listener TLS keys, a client's TLS keys): mutual TLS, PEM stores."""
    server = {
        "ssl.keystore.type": "PEM",
        "listener.name.controller.ssl.keystore.location": str(pki.issue("controller")),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(pki.ca_pem),
        "ssl.client.auth": "required",
    }
    client = {
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(pki.ca_pem),
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(pki.issue("admin-client")),
    }
    return server, client


def sasl(mechanism: str) -> tuple[dict[str, str], dict[str, str]]:
    """(the controllers' SASL keys, a client's SASL keys): controllers and clients both use ``mechanism``."""
    module = PLAIN if mechanism == "PLAIN" else SCRAM
    server = {
        "sasl.mechanism.controller.protocol": mechanism,
        "listener.name.controller.sasl.enabled.mechanisms": mechanism,
        f"listener.name.controller.{mechanism.lower()}.sasl.jaas.config": jaas(
            module, "admin", "admin-secret", USERS
        ),
    }
    return server, {"sasl.mechanism": mechanism, "sasl.jaas.config": jaas(module, "alice", "alice-secret")}


# (protocol, SASL mechanism, kinds). A Kafka controller joins where it can authenticate its peers: Kafka's SCRAM
# server reads credentials from its metadata image (UserScramCredentialRecords), never from JAAS user_ options.
CASES = [
    ("SSL", None, ("kraftd", "kraftd", "kafka")),
    ("SASL_PLAINTEXT", "PLAIN", ("kraftd", "kraftd", "kafka")),
    ("SASL_SSL", "SCRAM-SHA-256", ("kraftd", "kraftd", "kraftd")),
]


def secured(protocol: str, mechanism: str | None, pki: Pki) -> tuple[dict[str, str], dict[str, str]]:
    """(the controllers' listener properties, a client's properties) for ``protocol``."""
    server = {"listener.security.protocol.map": f"CONTROLLER:{protocol}"}
    client = {"security.protocol": protocol}
    for part in (tls(pki) if "SSL" in protocol else None, sasl(mechanism) if mechanism else None):
        if part is not None:
            server.update(part[0])
            client.update(part[1])
    return server, client


def command_config(node: Node, client: dict[str, str], name: str) -> str:
    """The joining controller's properties followed by the client's security properties."""
    path = node.root / f"{name}-{node.node_id}.properties"
    path.write_text(node.config.read_text() + "".join(f"{k}={v}\n" for k, v in client.items()))
    return str(path)


def registered_protocols(q: MixedQuorum) -> dict[int, set[int]]:
    """The security protocol ids each controller registered (RegisterControllerRecord) in node 1's log."""
    out: dict[int, set[int]] = {}
    for _, d in metadata_records(q.node(1).metadata_dir):
        if d.api_key == REGISTER_CONTROLLER_RECORD:
            out.setdefault(d.record.controller_id, set()).update(
                e.security_protocol for e in d.record.end_points
            )
    return out


def refused(out: ToolResult, *, ours_: bool, expect: str) -> None:
    assert out.returncode != 0, out.stdout
    if ours_:  # an operator gets one line, not a traceback
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("Error: ") and expect in lines[0], out.stderr
    else:
        assert expect in out.stderr + out.stdout, out.stderr[-3000:]


@pytest.mark.parametrize("protocol,mechanism,kinds", CASES, ids=[c[0] for c in CASES])
def test_add_and_remove_controllers_over_a_secured_controller_listener(
    tmp_path: Path, protocol: str, mechanism: str | None, kinds: tuple[str, ...]
) -> None:
    classpath()
    pki = Pki(tmp_path / "pki")
    server, client = secured(protocol, mechanism, pki)
    q = MixedQuorum(
        tmp_path / "q",
        list(kinds),
        bootstrap="kip853",
        format_nodes=False,
        extra={**server, "controller.quorum.auto.join.enable": "false"},
    )
    ssl = (
        client_context(
            TlsSettings(
                truststore_location=client["ssl.truststore.location"],
                keystore_location=client["ssl.keystore.location"],
            )
        )
        if "SSL" in protocol
        else None
    )
    sasl = SaslClientConfig(mechanism, "alice", "alice-secret") if mechanism else None
    q.describe = lambda node_ids=None, timeout_ms=3000: asyncio.run(  # type: ignore[method-assign]
        fetch_quorum([("127.0.0.1", n.port) for n in q.nodes if n.alive()], 2, timeout_ms, ssl, sasl)
    )[1]
    with q:
        one, two, three = q.nodes
        format_node(q, one, "--standalone")
        format_node(q, two, "--no-initial-controllers")
        format_node(q, three, "--no-initial-controllers")
        q.start_all()
        wait_voters(q, [1], "the standalone leader")
        q.wait_for(
            "both observers fetching", lambda i: {o.replica_id for o in i.observers} == {2, 3}, timeout=60
        )
        before = q.describe()

        # Negative: a client without the listener's security (SSL), or with a wrong password (SASL).
        if mechanism is None:
            bad = {"default.api.timeout.ms": "4000", "request.timeout.ms": "2000"}
            kafka_expect, ours_expect = "TimeoutException", "set security.protocol"
        else:
            module = PLAIN if mechanism == "PLAIN" else SCRAM
            bad = {**client, "sasl.jaas.config": jaas(module, "alice", "not-her-password")}
            kafka_expect, ours_expect = "SaslAuthenticationException", "SASL_AUTHENTICATION_FAILED"
        cfg = command_config(two, bad, "bad")
        refused(kafkas(q, "--command-config", cfg, "add-controller"), ours_=False, expect=kafka_expect)
        refused(
            ours(q, "--timeout-ms", "4000", "--command-config", cfg, "add-controller"),
            ours_=True,
            expect=ours_expect,
        )
        after = q.describe()
        assert [v.replica_id for v in after.voters] == [1] and after.leader_epoch == before.leader_epoch

        # Kafka's tool adds 2, ours adds 3; ours removes 2, Kafka's removes 3.
        cfg2, cfg3 = command_config(two, client, "client"), command_config(three, client, "client")
        out = retried(
            functools.partial(kafkas, q, "--command-config", cfg2, "add-controller"), "kafka adds 2", q
        )
        assert out.stdout == added_line(two)
        wait_voters(q, [1, 2], "two voters")
        out = retried(functools.partial(ours, q, "--command-config", cfg3, "add-controller"), "we add 3", q)
        assert out.stdout == added_line(three)
        leader = wait_voters(q, [1, 2, 3], "three voters")
        assert leader == 1
        retried(functools.partial(ours, q, "--command-config", cfg2, *remove_args(q, 2)), "we remove 2", q)
        wait_voters(q, [1, 3], "voters 1 and 3")
        retried(
            functools.partial(kafkas, q, "--command-config", cfg3, *remove_args(q, 3)), "kafka removes 3", q
        )
        final = wait_voters(q, [1], "one voter again")
        assert final == 1
        # Every controller registered its listener with the protocol the map gives it (Kafka's SecurityProtocol id),
        # as the Kafka controller does; kraftd used to register PLAINTEXT whatever the listener spoke.
        deadline = time.monotonic() + 30
        while len(registered := registered_protocols(q)) < 3 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert registered == {i: {PROTOCOLS.index(protocol)} for i in (1, 2, 3)}, registered
        for n in q.nodes:
            assert n.alive() and "Traceback" not in n.log_text(), n.tail()
