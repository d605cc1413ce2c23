"""``kraft-metadata-quorum``: describe the quorum the way Kafka's kafka-metadata-quorum does.

Flow (Kafka's ``--bootstrap-controller`` path): ApiVersions, then DescribeCluster (endpoint type 2) to learn
the cluster id and the active controller, then DescribeQuorum to that controller. ``--bootstrap-server`` is
accepted and follows the same path (our controllers answer brokers' questions too).

Contracts:
1. Exactly one of ``--bootstrap-server`` / ``--bootstrap-controller`` is required, and exactly one of
   ``describe --status`` / ``--replication``; ``--human-readable`` only goes with ``--replication``.
2. Output is tools.quorum_report's; failures print one line on stderr and exit 1. A plaintext client (no
   ``security.protocol`` in ``--command-config``) whose connections the controller closes, or answers with TLS,
   is told that the listener may require SSL or SASL: such a listener closes a plaintext client without an
   answer (kraftd) or answers its first bytes with a TLS alert (Kafka).
3. Every retry loop is bounded (a leader change between DescribeCluster and DescribeQuorum is retried a few
   times within ``--timeout-ms``: kwire.quorum_client contract 2).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from ssl import SSLContext

import click

from kraftd.config import ConfigError, parse_properties
from kraftd.security import client_sasl, client_tls
from kraftd.storage.uuids import uuid_from_str, uuid_to_str
from kwire.errors import KraftError
from kwire.quorum_client import fetch_quorum
from kwire.sasl import SaslClientConfig
from kwire.tls import client_context
from tools.quorum_report import replication_report, status_report
from tools.quorum_voters import add_voter, joining_controller, remove_voter

CONTROLLERS = 2
BROKERS = 1


def parse_hosts(text: str) -> list[tuple[str, int]]:
    out = []
    for item in (p.strip() for p in text.split(",")):
        host, sep, port = item.rpartition(":")
        if not sep or not port.isdigit():
            raise click.BadParameter(f"{item!r} is not host:port")
        out.append((host.strip("[]"), int(port)))
    return out


@click.group(help="This tool describes kraft metadata quorum status.")
@click.option("--bootstrap-server", help="A comma-separated list of host:port pairs of the cluster.")
@click.option("--bootstrap-controller", help="A comma-separated list of host:port pairs of the controllers.")
@click.option(
    "--command-config",
    type=click.Path(exists=True, dir_okay=False),
    help="Client properties: security.protocol, ssl.* (PEM stores), sasl.mechanism and sasl.jaas.config.",
)
@click.option("--timeout-ms", default=10000, show_default=True, hidden=True)
@click.version_option(package_name="kraftd", prog_name="kraft-metadata-quorum")
@click.pass_context
def main(
    ctx: click.Context,
    bootstrap_server: str | None,
    bootstrap_controller: str | None,
    command_config: str | None,
    timeout_ms: int,
) -> None:
    ctx.obj = (bootstrap_server, bootstrap_controller, timeout_ms, command_config)


_Obj = tuple[str | None, str | None, int, str | None]


def _failure(exc: KraftError, ssl: SSLContext | None, sasl: SaslClientConfig | None) -> click.ClickException:
    """Contract 2."""
    text = str(exc)
    plaintext_refused = sasl is None and ("closed the connection" in text or "reset by peer" in text)
    if ssl is None and (plaintext_refused or "the peer speaks TLS" in text):
        text += (
            " (a controller listener that requires SSL or SASL closes plaintext clients: set security.protocol"
            " and its ssl.*/sasl.* keys in --command-config)"
        )
    return click.ClickException(text)


def _target(
    obj: _Obj,
) -> tuple[list[tuple[str, int]], int, int, SSLContext | None, SaslClientConfig | None]:
    """Contract 1, checked when a sub-command runs (so ``describe --help`` needs no bootstrap flag); the
    ``--command-config`` client properties give TLS and SASL settings."""
    bootstrap_server, bootstrap_controller, timeout_ms, command_config = obj
    if (bootstrap_server is None) == (bootstrap_controller is None):
        raise click.UsageError("Exactly one of --bootstrap-server or --bootstrap-controller must be given.")
    hosts = parse_hosts(bootstrap_server or bootstrap_controller or "")
    ssl, sasl = None, None
    if command_config is not None:
        try:
            props = parse_properties(Path(command_config).read_text("latin-1"))
            tls = client_tls(props, ConfigError)
            ssl = client_context(tls) if tls is not None else None
            sasl = client_sasl(props, ConfigError)
        except KraftError as exc:
            raise click.ClickException(f"--command-config {command_config}: {exc}") from None
    return hosts, CONTROLLERS if bootstrap_controller else BROKERS, timeout_ms, ssl, sasl


@main.command(help="Describe the metadata quorum info")
@click.option("--status", is_flag=True, help="A short summary of the quorum status.")
@click.option("--replication", is_flag=True, help="Detailed information about the status of replication.")
@click.option("--human-readable", is_flag=True, help="Human-readable output (with --replication).")
@click.pass_obj
def describe(obj: _Obj, status: bool, replication: bool, human_readable: bool) -> None:
    hosts, endpoint_type, timeout_ms, ssl, sasl = _target(obj)
    if status and replication:
        raise click.ClickException(
            "Only one of --status or --replication should be specified with describe sub-command"
        )
    if not status and not replication:
        raise click.ClickException(
            "One of --status or --replication must be specified with describe sub-command"
        )
    if status and human_readable:
        raise click.ClickException("The option --human-readable is only supported along with --replication")
    try:
        cluster_id, info = asyncio.run(fetch_quorum(hosts, endpoint_type, timeout_ms, ssl, sasl))
        text = (
            status_report(cluster_id, info)
            if status
            else replication_report(info, human_readable=human_readable)
        )
    except KraftError as exc:
        raise _failure(exc, ssl, sasl) from None
    click.echo(text, nl=False)


@main.command("remove-controller", help="Removes a controller from the KRaft controller cluster.")
@click.option("--controller-id", type=int, required=True, help="The id of the controller to remove.")
@click.option(
    "--controller-directory-id", required=True, help="The directory id of the controller to remove."
)
@click.option("--dry-run", is_flag=True, help="True if we should print what would be done, but not do it.")
@click.pass_obj
def remove_controller(
    obj: _Obj,
    controller_id: int,
    controller_directory_id: str,
    dry_run: bool,
) -> None:
    hosts, _, timeout_ms, ssl, sasl = _target(obj)
    try:
        dir_id = uuid_from_str(controller_directory_id)
    except (ValueError, KraftError) as exc:
        raise click.ClickException(f"--controller-directory-id: {exc}") from None
    if not dry_run:
        try:
            asyncio.run(remove_voter(hosts, controller_id, dir_id, timeout_ms, ssl, sasl))
        except KraftError as exc:
            raise _failure(exc, ssl, sasl) from None
    # Kafka 4.3.1's tool prints its prefix with a trailing space, then " KRaft controller": two spaces.
    prefix = "DRY RUN of removing " if dry_run else "Removed "
    click.echo(f"{prefix} KRaft controller {controller_id} with directory id {controller_directory_id}")


@main.command("add-controller", help="Add a controller to the KRaft controller cluster")
@click.option("--dry-run", is_flag=True, help="True if we should print what would be done, but not do it.")
@click.pass_obj
def add_controller(obj: _Obj, dry_run: bool) -> None:
    """The joining controller's own properties are the --command-config file (tools.quorum_voters)."""
    hosts, _, timeout_ms, ssl, sasl = _target(obj)
    if obj[3] is None:
        raise click.ClickException(
            "You must supply the configuration file of the controller you are adding when using add-controller."
        )
    try:
        joining = joining_controller(parse_properties(Path(obj[3]).read_text("latin-1")))
        if not dry_run:
            asyncio.run(add_voter(hosts, joining, timeout_ms, ssl, sasl))
    except KraftError as exc:
        raise _failure(exc, ssl, sasl) from None
    prefix = "DRY RUN of adding" if dry_run else "Added"
    click.echo(
        f"{prefix} controller {joining.node_id} with directory id {uuid_to_str(joining.directory_id)} and "
        f"endpoints: {joining.describe_endpoints()}"
    )


__all__ = ["main", "fetch_quorum", "remove_voter", "add_voter"]
