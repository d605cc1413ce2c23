"""Security metadata written by kraftd controllers and enforced by a real Apache Kafka 4.3.1 broker.

One broker (``StandardAuthorizer``, a PLAINTEXT listener for the super user and a SASL_PLAINTEXT listener with
SCRAM-SHA-256/512, ``delegation.token.secret.key``) on three kraftd controllers. Every write below is forwarded by
the broker in an Envelope, validated and written by kraftd; the broker learns the result only by replaying
kraftd's records. Invariants, each observed on real processes over loopback:
1. SCRAM (AlterUserScramCredentials): Kafka's kafka-configs adds a SCRAM-SHA-256 credential; kafka-python then
   authenticates to the broker's SASL listener with it (a wrong password is refused), and kafka-configs describes
   the mechanism and iterations back; deleting it makes the same login fail.
2. ACLs (CreateAcls / DeleteAcls): kafka-acls adds a DENY Write for the SCRAM user on one topic and lists it; the
   broker refuses that user's produce to the topic (TOPIC_AUTHORIZATION_FAILED) while another topic works;
   kafka-acls with --bootstrap-controller lists it from kraftd's DescribeAcls; kafka-acls removes it and the
   produce succeeds.
3. Client quotas (AlterClientQuotas): kafka-configs sets user and default client-id quotas, describes them back
   from the broker, and deletes one.
4. Delegation tokens (Create/Renew/ExpireDelegationToken): kafka-delegation-tokens, as the SCRAM user, creates a
   token; the broker's describe shows the same token id and HMAC (the broker computes the HMAC itself from the
   shared secret) and kafka-topics authenticates with the token (SCRAM, tokenauth=true); renew and expire
   answer; after expiry the broker lists no token.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.interop.kafka import MixedQuorum, Node, run_tool
from tools.local_quorum import free_ports

pytestmark = [pytest.mark.interop, pytest.mark.slow]
BROKER_ID = 100
SECRET = "kraftd-token-secret"
USER, PASSWORD = "alice", "alice-secret"
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
SCRAM_JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required;"


def _broker(quorum: MixedQuorum, root: Path) -> tuple[Node, int]:
    plain, sasl = free_ports(2)
    node = Node("kafka", BROKER_ID, plain, root)
    props = {
        "process.roles": "broker",
        "node.id": str(BROKER_ID),
        "listeners": f"PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl}",
        "controller.listener.names": "CONTROLLER",
        "controller.quorum.voters": quorum.voters,
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
        "inter.broker.listener.name": "PLAINTEXT",
        "sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": SCRAM_JAAS,
        "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": SCRAM_JAAS,
        "authorizer.class.name": AUTHORIZER,
        "super.users": "User:ANONYMOUS",
        "allow.everyone.if.no.acl.found": "true",
        "delegation.token.secret.key": SECRET,
        "log.dirs": str(node.data_dir),
        "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": "1",
        "transaction.state.log.replication.factor": "1",
    }
    node.config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    run_tool(
        "kafka.tools.StorageTool",
        ["format", f"--cluster-id={quorum.cluster_id}", "-c", str(node.config)],
        workdir=root,
    ).check()
    return node, sasl


def _wait_log(node: Node, pattern: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not re.search(pattern, node.log_text()):
        assert node.alive(), node.tail()
        assert time.monotonic() < deadline, f"no {pattern!r} in the broker log\n{node.tail()}"
        time.sleep(0.2)


def _until(what: str, probe: Callable[[], Any], timeout: float = 30) -> Any:
    """Deadline-based retry: the broker applies kraftd's records shortly after they commit."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            out = probe()
            if out:
                return out
            last: object = out
        except Exception as exc:  # noqa: BLE001 - retried until the deadline, then reported
            last = exc
        assert time.monotonic() < deadline, f"{what}: still {last!r}"
        time.sleep(0.3)


def _sasl(port: int, password: str) -> dict[str, object]:
    return {
        "bootstrap.servers": f"127.0.0.1:{port}",
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-256",
        "sasl.username": USER,
        "sasl.password": password,
        "log_level": 0,
    }


def _logs_in(port: int, password: str) -> bool:
    """confluent-kafka (librdkafka) asks the SASL listener for metadata; an authentication failure is final."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    errors: list[object] = []
    client = AdminClient({**_sasl(port, password), "error_cb": errors.append})
    try:
        client.list_topics(timeout=5)
        return True
    except KafkaException:
        return False


def _produce(port: int, topic: str) -> str:
    """Produce one record as the SCRAM user: "ok" or the delivery error's name."""
    from confluent_kafka import Producer

    outcome: list[str] = []
    producer = Producer({**_sasl(port, PASSWORD), "message.timeout.ms": 8000, "retries": 0})
    producer.produce(topic, b"x", on_delivery=lambda err, _msg: outcome.append(err.name() if err else "ok"))
    producer.flush(12)
    return outcome[0] if outcome else "timeout"


def test_security_metadata_through_a_real_broker(tmp_path: Path) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic

    extra = {
        "authorizer.class.name": AUTHORIZER,
        "super.users": "User:ANONYMOUS",
        "delegation.token.secret.key": SECRET,
    }
    with MixedQuorum(tmp_path / "q", ["kraftd"] * 3, extra=extra) as quorum:
        quorum.start_all()
        quorum.wait_leader()
        broker, sasl_port = _broker(quorum, tmp_path)
        try:
            broker.start()
            _wait_log(broker, r"Kafka Server started", 120)
            plain = f"127.0.0.1:{broker.port}"

            def tool(main: str, *args: str) -> str:
                return run_tool(main, ["--bootstrap-server", plain, *args], workdir=tmp_path).check().stdout

            def configs(*args: str) -> str:
                return tool("kafka.admin.ConfigCommand", *args)

            # 1. SCRAM: the broker authenticates alice with the credential kraftd stored.
            assert not _logs_in(sasl_port, PASSWORD)
            configs(
                "--alter",
                "--entity-type",
                "users",
                "--entity-name",
                USER,
                "--add-config",
                f"SCRAM-SHA-256=[iterations=8192,password={PASSWORD}]",
            )
            _until("alice logs in with SCRAM-SHA-256", lambda: _logs_in(sasl_port, PASSWORD))
            assert not _logs_in(sasl_port, "wrong-password")
            described = configs("--describe", "--entity-type", "users", "--entity-name", USER)
            assert "SCRAM-SHA-256=iterations=8192" in described, described

            admin = KafkaAdminClient(bootstrap_servers=plain, request_timeout_ms=15000)
            admin.create_topics([NewTopic("open", 1, 1), NewTopic("guarded", 1, 1)])
            _until("alice produces to guarded", lambda: _produce(sasl_port, "guarded") == "ok")

            # 2. ACLs: a DENY written by kraftd is enforced by the broker's StandardAuthorizer.
            acl = ["--deny-principal", f"User:{USER}", "--operation", "Write", "--topic", "guarded"]
            tool("org.apache.kafka.tools.AclCommand", "--add", *acl)
            listed = tool("org.apache.kafka.tools.AclCommand", "--list", "--topic", "guarded")
            assert f"principal=User:{USER}" in listed and "operation=WRITE" in listed, listed
            assert "permissionType=DENY" in listed, listed
            # DescribeAcls answered by a kraftd controller itself (Kafka's Admin client, --bootstrap-controller).
            controller = f"127.0.0.1:{quorum.nodes[0].port}"

            def at_controller() -> str:
                args = ["--bootstrap-controller", controller, "--list", "--topic", "guarded"]
                return run_tool("org.apache.kafka.tools.AclCommand", args, workdir=tmp_path).check().stdout

            from_controller = _until(
                "kraftd lists the ACL",
                lambda: (lambda out: out if "permissionType=DENY" in out else None)(at_controller()),
            )
            assert f"principal=User:{USER}" in from_controller, from_controller
            _until("guarded refused", lambda: _produce(sasl_port, "guarded") == "TOPIC_AUTHORIZATION_FAILED")
            assert _produce(sasl_port, "open") == "ok"
            tool("org.apache.kafka.tools.AclCommand", "--remove", "--force", *acl)
            assert "principal=" not in tool(
                "org.apache.kafka.tools.AclCommand", "--list", "--topic", "guarded"
            )
            _until("guarded open again", lambda: _produce(sasl_port, "guarded") == "ok")

            # 3. Client quotas, described back by the broker from kraftd's ClientQuotaRecords.
            configs(
                "--alter",
                "--entity-type",
                "users",
                "--entity-name",
                USER,
                "--add-config",
                "producer_byte_rate=1048576,consumer_byte_rate=2097152",
            )
            configs(
                "--alter",
                "--entity-type",
                "clients",
                "--entity-default",
                "--add-config",
                "request_percentage=50",
            )

            def user_quotas() -> str:
                return configs("--describe", "--entity-type", "users", "--entity-name", USER)

            quotas = _until(
                "quotas described",
                lambda: (lambda out: out if "producer_byte_rate=1048576" in out else None)(user_quotas()),
            )
            assert "consumer_byte_rate=2097152" in quotas, quotas
            defaults = configs("--describe", "--entity-type", "clients", "--entity-default")
            assert "request_percentage=50" in defaults, defaults
            configs(
                "--alter",
                "--entity-type",
                "users",
                "--entity-name",
                USER,
                "--delete-config",
                "producer_byte_rate",
            )
            after = configs("--describe", "--entity-type", "users", "--entity-name", USER)
            assert "producer_byte_rate" not in after and "consumer_byte_rate=2097152" in after, after

            # 4. Delegation tokens, created by alice over SCRAM; the broker computes the same HMAC.
            props = tmp_path / "alice.properties"
            props.write_text(
                "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n"
                "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
                f'username="{USER}" password="{PASSWORD}";\n'
            )

            def tokens(*args: str) -> str:
                return (
                    run_tool(
                        "org.apache.kafka.tools.DelegationTokenCommand",
                        [
                            "--bootstrap-server",
                            f"127.0.0.1:{sasl_port}",
                            "--command-config",
                            str(props),
                            *args,
                        ],
                        workdir=tmp_path,
                    )
                    .check()
                    .stdout
                )

            created = tokens("--create", "--max-life-time-period", "-1")
            m = re.search(r"\n(\S+)\s+(\S+)\s+User:alice", created)
            assert m, created
            token_id, mac = m.group(1), m.group(2)
            listed_tokens = _until(
                "token described",
                lambda: (lambda out: out if token_id in out else None)(
                    tokens("--describe", "--owner-principal", f"User:{USER}")
                ),
            )
            assert mac in listed_tokens, listed_tokens
            # The token authenticates to the broker (SCRAM with tokenauth): id and HMAC as kraftd answered them.
            token_props = tmp_path / "token.properties"
            token_props.write_text(
                "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n"
                "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
                f'username="{token_id}" password="{mac}" tokenauth="true";\n'
            )
            listed_topics = (
                run_tool(
                    "org.apache.kafka.tools.TopicCommand",
                    [
                        "--bootstrap-server",
                        f"127.0.0.1:{sasl_port}",
                        "--command-config",
                        str(token_props),
                        "--list",
                    ],
                    workdir=tmp_path,
                )
                .check()
                .stdout
            )
            assert "guarded" in listed_topics.split(), listed_topics
            assert "Completed renew operation" in tokens(
                "--renew", "--hmac", mac, "--renew-time-period", "-1"
            )
            assert "Completed expire operation" in tokens(
                "--expire", "--hmac", mac, "--expiry-time-period", "-1"
            )
            _until(
                "token gone",
                lambda: token_id not in tokens("--describe", "--owner-principal", f"User:{USER}"),
            )

            # SCRAM deletion: the same login now fails.
            configs(
                "--alter", "--entity-type", "users", "--entity-name", USER, "--delete-config", "SCRAM-SHA-256"
            )
            _until("alice refused", lambda: not _logs_in(sasl_port, PASSWORD))
            admin.close()
        finally:
            broker.stop()
