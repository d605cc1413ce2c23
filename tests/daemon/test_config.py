"""server.properties parsing and validation (kraftd.config)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from kraftd.config import (
    ConfigError,
    Endpoint,
    StaticVoter,
    config_from_properties,
    load_config,
    parse_properties,
)
from kwire.errors import KraftError

BASE = {
    "node.id": "1",
    "process.roles": "controller",
    "controller.listener.names": "CONTROLLER",
    "listeners": "CONTROLLER://127.0.0.1:9093",
    "controller.quorum.voters": "1@127.0.0.1:9093,2@127.0.0.1:9094,3@127.0.0.1:9095",
    "metadata.log.dir": "/tmp/x",
}


def with_(**changes: str | None) -> dict[str, str]:
    props = dict(BASE)
    for k, v in changes.items():
        key = k.replace("_", ".")
        if v is None:
            props.pop(key, None)
        else:
            props[key] = v
    return props


def test_properties_comments_separators_and_whitespace() -> None:
    text = "# a comment\n! another\n\n  a=1\nb : 2\nc 3\nd=\ne   =   spaced value  \n"
    assert parse_properties(text) == {"a": "1", "b": "2", "c": "3", "d": "", "e": "spaced value  "}


def test_properties_escapes_and_unicode() -> None:
    text = "path=C:\\\\dir\\tx\nkey\\ with\\ space=v\\u00e9\\n\nweird\\=key=1\n"
    props = parse_properties(text)
    assert props["path"] == "C:\\dir\tx"
    assert props["key with space"] == "v\u00e9\n"
    assert props["weird=key"] == "1"


def test_properties_line_continuation() -> None:
    text = "voters=1@h:1,\\\n        2@h:2,\\\n   3@h:3\nnext=ok\n# comment \\\nafter=yes\n"
    props = parse_properties(text)
    assert props == {"voters": "1@h:1,2@h:2,3@h:3", "next": "ok", "after": "yes"}


def test_properties_even_backslashes_do_not_continue() -> None:
    assert parse_properties("a=x\\\\\nb=y\n") == {"a": "x\\", "b": "y"}


def test_properties_later_duplicate_wins_and_bad_unicode_fails() -> None:
    assert parse_properties("a=1\na=2\n") == {"a": "2"}
    with pytest.raises(ConfigError, match="bad"):
        parse_properties("bad=\\u12G4\n")


def test_defaults_match_kafka() -> None:
    cfg = config_from_properties(BASE)
    assert cfg.node_id == 1
    assert cfg.election_timeout_ms == 1000
    assert cfg.fetch_timeout_ms == 2000
    assert cfg.election_backoff_max_ms == 1000
    assert cfg.request_timeout_ms == 2000
    assert cfg.retry_backoff_ms == 20
    assert cfg.append_linger_ms == 25
    assert cfg.segment_bytes == 1024**3
    assert cfg.quorum_voters == (
        StaticVoter(1, "127.0.0.1", 9093),
        StaticVoter(2, "127.0.0.1", 9094),
        StaticVoter(3, "127.0.0.1", 9095),
    )
    assert cfg.controller_listener == Endpoint("CONTROLLER", "127.0.0.1", 9093)
    assert cfg.security_protocol_map["CONTROLLER"] == "PLAINTEXT"
    assert cfg.metadata_log_dir == Path("/tmp/x")


def test_overrides_are_read() -> None:
    cfg = config_from_properties(
        with_(
            **{
                "controller.quorum.election.timeout.ms": "500",
                "controller.quorum.fetch.timeout.ms": "900",
                "controller.quorum.append.linger.ms": "0",
                "metadata.log.segment.bytes": "4096",
            }
        )
    )
    assert (cfg.election_timeout_ms, cfg.fetch_timeout_ms, cfg.append_linger_ms, cfg.segment_bytes) == (
        500,
        900,
        0,
        4096,
    )


def test_log_dir_fallbacks() -> None:
    props = with_(**{"metadata.log.dir": None, "log.dirs": "/a, /b"})
    assert config_from_properties(props).metadata_log_dir == Path("/a")
    props = with_(**{"metadata.log.dir": None})
    assert config_from_properties(props).metadata_log_dir == Path("/tmp/kafka-logs")


def test_advertised_listeners_override_bound_address() -> None:
    props = with_(listeners="CONTROLLER://:9093", **{"advertised.listeners": "CONTROLLER://127.0.0.1:9993"})
    cfg = config_from_properties(props)
    assert cfg.advertised_controller_listeners == (Endpoint("CONTROLLER", "127.0.0.1", 9993),)
    assert cfg.controller_listener == Endpoint("CONTROLLER", "", 9093)


def test_bootstrap_servers_alone_are_enough() -> None:
    props = with_(
        **{"controller.quorum.voters": None, "controller.quorum.bootstrap.servers": "127.0.0.1:9093"}
    )
    cfg = config_from_properties(props)
    assert cfg.quorum_voters == ()
    assert cfg.bootstrap_servers == (("127.0.0.1", 9093),)


@pytest.mark.parametrize(
    ("changes", "key", "form"),
    [
        ({"node.id": "one"}, "node.id", "integer"),
        ({"node.id": None}, "node.id", "required"),
        ({"node.id": "-3"}, "node.id", ">= 0"),
        ({"process.roles": "broker"}, "process.roles", "'controller'"),
        ({"controller.listener.names": None}, "controller.listener.names", "listener names"),
        ({"listeners": "CONTROLLER//127.0.0.1:9093"}, "listeners", "NAME://host:port"),
        ({"listeners": "CONTROLLER://127.0.0.1:port"}, "listeners", "NAME://host:port"),
        ({"listeners": "CONTROLLER://127.0.0.1:70000"}, "listeners", "0-65535"),
        ({"listeners": "OTHER://127.0.0.1:9093"}, "listeners", "CONTROLLER://"),
        ({"controller.quorum.voters": "1@127.0.0.1"}, "controller.quorum.voters", "id@host:port"),
        ({"controller.quorum.voters": "x@127.0.0.1:1"}, "controller.quorum.voters", "id@host:port"),
        ({"controller.quorum.voters": "1@h:1,1@h:2"}, "controller.quorum.voters", "twice"),
        ({"controller.quorum.voters": "2@h:1"}, "controller.quorum.voters", "must be one of the voters"),
        ({"controller.quorum.voters": None}, "controller.quorum.voters", "bootstrap.servers"),
        ({"controller.quorum.fetch.timeout.ms": "0"}, "controller.quorum.fetch.timeout.ms", ">= 1"),
        ({"controller.quorum.append.linger.ms": "fast"}, "controller.quorum.append.linger.ms", "integer"),
        ({"metadata.log.segment.bytes": "10"}, "metadata.log.segment.bytes", ">= 1024"),
        ({"listener.security.protocol.map": "CONTROLLER:SSL"}, "ssl.keystore.location", "PEM file"),
        (
            {"listener.security.protocol.map": "CONTROLLER:KERBEROS"},
            "listener.security.protocol.map",
            "SASL_SSL",
        ),
        (
            {"listener.security.protocol.map": "CONTROLLER:SSL", "ssl.keystore.type": "JKS"},
            "ssl.keystore.type",
            "PEM",
        ),
        (
            {
                "listener.security.protocol.map": "CONTROLLER:SSL",
                "ssl.keystore.location": "k.pem",
                "ssl.client.auth": "maybe",
            },
            "ssl.client.auth",
            "required",
        ),
        (
            {"listener.security.protocol.map": "OTHER:PLAINTEXT"},
            "listener.security.protocol.map",
            "NAME:PROTOCOL",
        ),
        ({"listener.security.protocol.map": "garbage"}, "listener.security.protocol.map", "NAME:PROTOCOL"),
    ],
)
def test_invalid_values_name_key_and_form(changes: dict[str, str | None], key: str, form: str) -> None:
    props = dict(BASE)
    for k, v in changes.items():
        if v is None:
            props.pop(k, None)
        else:
            props[k] = v
    with pytest.raises(ConfigError) as info:
        config_from_properties(props)
    assert str(info.value).startswith(key + ":")
    assert form in str(info.value)
    assert isinstance(info.value, KraftError)


def test_unknown_keys_warn(caplog: pytest.LogCaptureFixture) -> None:
    props = with_(**{"made.up.key": "1", "num.network.threads": "3"})
    with caplog.at_level(logging.WARNING, logger="kraftd.config"):
        cfg = config_from_properties(props)
    assert cfg.unknown_keys == ("made.up.key",)
    assert "made.up.key" in caplog.text
    assert "num.network.threads" not in caplog.text


def test_a_mistyped_key_gets_a_suggestion_even_when_the_config_is_refused(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The typo is the likely cause of the error that follows, so its warning comes first."""
    props = {k: v for k, v in with_().items() if k != "controller.quorum.voters"}
    props["controller.quorum.bootstrap.server"] = "127.0.0.1:9093"
    props["log.retention.hours"] = "1"  # a Kafka key kraftd tolerates: no warning
    with caplog.at_level(logging.WARNING, logger="kraftd.config"), pytest.raises(ConfigError):
        config_from_properties(props)
    assert caplog.messages == [
        "unknown configuration key 'controller.quorum.bootstrap.server' ignored; "
        "did you mean controller.quorum.bootstrap.servers?"
    ]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="kraftd.config"):
        cfg = config_from_properties(with_(**{"made.up.key": "1", "ssl.keystore.pasword": "x"}))
    assert cfg.unknown_keys == ("made.up.key", "ssl.keystore.pasword")
    assert caplog.messages == [
        "unknown configuration key 'made.up.key' ignored",
        "unknown configuration key 'ssl.keystore.pasword' ignored; did you mean ssl.keystore.password?",
    ]


def test_load_config_file(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text("\n".join(f"{k}={v}" for k, v in BASE.items()) + "\n")
    assert load_config(path).node_id == 1
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "missing.properties")


def test_broker_session_timeout_is_read_and_reaches_the_heartbeat_table(tmp_path: Path) -> None:
    """broker.session.timeout.ms (Kafka's default 9000) decides when the active controller fences a broker; it
    was ignored (always 9000), so a broker with a short session timeout stayed unfenced for 9 s."""
    from kraftd.shell.node import ControllerNode
    from tools.local_quorum import CLUSTER_ID, free_ports, write_properties
    from tools.storage_cli import format_directory

    assert config_from_properties(BASE).broker_session_timeout_ms == 9000
    assert (
        config_from_properties(with_(**{"broker.session.timeout.ms": "3000"})).broker_session_timeout_ms
        == 3000
    )
    with pytest.raises(ConfigError, match="broker.session.timeout.ms"):
        config_from_properties(with_(**{"broker.session.timeout.ms": "0"}))
    (port,) = free_ports(1)
    path = write_properties(
        tmp_path / "s.properties",
        1,
        port,
        tmp_path / "d",
        voters=f"1@127.0.0.1:{port}",
        extra={"broker.session.timeout.ms": "3000"},
    )
    format_directory(load_config(path), CLUSTER_ID, release_version="4.0")

    async def run() -> None:
        node = ControllerNode(load_config(path), seed=0)
        await node.start()
        try:
            hb = node.rpcs.heartbeats
            assert hb.session_timeout_ms == 3000
            hb.touch(100, 0)
            assert hb.alive(100, 2999) and not hb.alive(100, 3000)
        finally:
            await node.stop()

    asyncio.run(run())
