"""``kraft-storage``: format, inspect and generate ids for a controller's metadata log directory.

Mirrors Kafka's ``kafka-storage`` verbs and flags: ``format --cluster-id ID --config FILE (--standalone |
--initial-controllers ... | --no-initial-controllers) [--ignore-formatted] [--release-version V]
[--feature name=level ...]``, ``info --config FILE``,
``random-uuid``. Exit status 0 on success, 1 with one message on stderr otherwise.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from kraftd.config import ConfigError, KraftConfig, load_config
from kraftd.controller.features import (
    KRAFT_VERSION,
    bootstrap_feature_records,
    mv_name,
    parse_feature_flags,
    resolve_features,
)
from kraftd.storage.bootstrap import BootstrapVoter, parse_initial_controllers, write_bootstrap_checkpoint
from kraftd.storage.bootstrap_metadata import write_bootstrap_metadata
from kraftd.storage.errors import StorageError
from kraftd.storage.layout import partition_dir
from kraftd.storage.meta import MetaProperties, meta_path, read_meta, write_meta
from kraftd.storage.uuids import random_uuid, uuid_from_str, uuid_to_str
from kwire.errors import KraftError
from kwire.metadata_frame import encode_record


class FormatError(KraftError):
    """``kraft-storage format`` was asked for something it must refuse."""


@click.group(help="The kraftd storage tool (Kafka's kafka-storage verbs).")
@click.version_option(package_name="kraftd", prog_name="kraft-storage")
def main() -> None:
    pass


@main.command("random-uuid", help="Print a random UUID.")
def random_uuid_cmd() -> None:
    click.echo(uuid_to_str(random_uuid()))


def _load(config: str) -> KraftConfig:
    try:
        return load_config(config)
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None


@main.command(help="Format the metadata log directory of this node.")
@click.option("--config", "-c", "config_path", required=True, help="The server.properties file to use.")
@click.option("--cluster-id", "-t", required=True, help="The cluster ID to use.")
@click.option("--ignore-formatted", "-g", is_flag=True, help="Succeed if the directory is already formatted.")
@click.option("--standalone", "-s", is_flag=True, help="Bootstrap a one-voter quorum made of this node.")
@click.option(
    "--initial-controllers",
    "-I",
    help="The initial voters: id@host:port:directoryId,... (the same value on every controller).",
)
@click.option(
    "--no-initial-controllers", "-N", is_flag=True, help="Join an existing quorum later as an observer."
)
@click.option(
    "--release-version",
    "-r",
    help="The release version for the initial feature settings (e.g. 4.0 or 4.0-IV1; default 4.3-IV0).",
)
@click.option(
    "--feature", "-f", "features", multiple=True, help="A feature=level setting; may be given several times."
)
def format(  # noqa: A001 - the verb is Kafka's
    config_path: str,
    cluster_id: str,
    ignore_formatted: bool,
    standalone: bool,
    initial_controllers: str | None,
    no_initial_controllers: bool,
    release_version: str | None,
    features: tuple[str, ...],
) -> None:
    config = _load(config_path)
    try:
        message = format_directory(
            config,
            cluster_id,
            standalone=standalone,
            initial_controllers=initial_controllers,
            no_initial_controllers=no_initial_controllers,
            ignore_formatted=ignore_formatted,
            release_version=release_version,
            features=features,
        )
    except KraftError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(message)


def format_directory(
    config: KraftConfig,
    cluster_id: str,
    *,
    standalone: bool = False,
    initial_controllers: str | None = None,
    no_initial_controllers: bool = False,
    ignore_formatted: bool = False,
    release_version: str | None = None,
    features: tuple[str, ...] = (),
) -> str:
    """Write meta.properties, bootstrap.checkpoint (finalized features) and, when voters are given, the
    bootstrap snapshot; return what was done."""
    if sum((standalone, initial_controllers is not None, no_initial_controllers)) > 1:
        raise FormatError(
            "Only one of --standalone, --initial-controllers, --no-initial-controllers may be given."
        )
    try:
        uuid_from_str(cluster_id)
    except ValueError as exc:
        raise FormatError(
            f"Cluster ID string {cluster_id} does not appear to be a valid UUID: {exc}"
        ) from None
    dynamic = standalone or initial_controllers is not None
    if config.quorum_voters and dynamic:
        raise FormatError(
            "You cannot specify controller.quorum.voters and format the node with --initial-controllers or "
            "--standalone. To use a dynamic quorum, remove controller.quorum.voters and set "
            "controller.quorum.bootstrap.servers instead."
        )
    if not config.quorum_voters and not dynamic and not no_initial_controllers:
        raise FormatError(
            "Because controller.quorum.voters is not set on this controller, you must specify one of: "
            "--standalone, --initial-controllers, or --no-initial-controllers."
        )
    overrides = parse_feature_flags(features)
    levels = resolve_features(release_version, overrides)
    kraft_flag = standalone or initial_controllers is not None or no_initial_controllers
    if overrides.get(KRAFT_VERSION, 0) > 0 and (config.quorum_voters or not kraft_flag):
        raise FormatError(
            f"Cannot set kraft.version to {overrides[KRAFT_VERSION]} unless controller.quorum.voters is empty "
            "and one of the flags --standalone, --initial-controllers, or --no-initial-controllers is used. "
            "For dynamic controllers support, try using one of --standalone, --initial-controllers, or "
            "--no-initial-controllers and removing controller.quorum.voters."
        )
    log_dir = config.metadata_log_dir
    # Kafka's Formatter formats metadata.log.dir and every directory of log.dirs (each its own directory id).
    extra = [d for d in dict.fromkeys(config.log_dirs) if d != log_dir]
    done = [d for d in [log_dir, *extra] if read_meta(d) is not None or meta_path(d).exists()]
    if done and not ignore_formatted:
        raise FormatError(
            f"Log directory {done[0]} is already formatted. Use --ignore-formatted to ignore this directory."
        )
    if log_dir in done:
        for d in extra:
            if d not in done:
                meta = read_meta(log_dir)
                assert meta is not None
                write_meta(d, MetaProperties(meta.cluster_id, config.node_id, random_uuid()))
        return f"All of the log directories are already formatted ({', '.join(map(str, done))})."

    voters: list[BootstrapVoter] = []
    directory_id = random_uuid()
    if standalone:
        endpoints = config.advertised_controller_listeners
        voters = [BootstrapVoter(config.node_id, directory_id, endpoints)]
    elif initial_controllers is not None:
        listener = config.controller_listener_names[0]
        voters = parse_initial_controllers(initial_controllers, listener)
        mine = next((v for v in voters if v.node_id == config.node_id), None)
        if mine is not None:
            directory_id = mine.directory_id

    write_meta(log_dir, MetaProperties(cluster_id, config.node_id, directory_id))
    for d in extra:
        if d not in done:
            write_meta(d, MetaProperties(cluster_id, config.node_id, random_uuid()))
    pdir = partition_dir(log_dir)
    pdir.mkdir(exist_ok=True)
    now_ms = int(time.time() * 1000)
    records = [encode_record(r, 0) for r in bootstrap_feature_records(levels)]
    write_bootstrap_metadata(log_dir, records, now_ms=now_ms)
    kraft_version = 1 if voters else 0
    if voters:
        write_bootstrap_checkpoint(pdir, voters, now_ms=now_ms)
    mv = mv_name(levels["metadata.version"])
    lines = [
        f"Formatting metadata directory {log_dir} with metadata.version {mv} (kraft.version {kraft_version})."
    ]
    lines += [
        f"Formatting data directory {d} with kraft.version {kraft_version}." for d in extra if d not in done
    ]
    return "\n".join(lines)


@main.command(help="Get information about the metadata log directory of this node.")
@click.option("--config", "-c", "config_path", required=True, help="The server.properties file to use.")
def info(config_path: str) -> None:
    config = _load(config_path)
    lines, problems = describe_directory(config.metadata_log_dir)
    click.echo("".join(lines), nl=False)
    if problems:
        sys.exit(1)


def describe_directory(log_dir: Path) -> tuple[list[str], list[str]]:
    """Kafka's ``info`` report for one directory: (lines to print, problems found)."""
    problems: list[str] = []
    lines: list[str] = []
    found = None
    if not log_dir.is_dir():
        problems.append(
            f"{log_dir} does not exist" if not log_dir.exists() else f"{log_dir} is not a directory"
        )
    else:
        lines += ["Found log directory:", f"  {log_dir}", ""]
        try:
            found = read_meta(log_dir)
            if found is None:
                problems.append(f"{log_dir} is not formatted.")
        except StorageError as exc:
            problems.append(f"Error loading {meta_path(log_dir)}: {exc}")
    if found is not None:
        props = {"cluster.id": found.cluster_id, "version": str(found.version)}
        props["node.id" if found.version == 1 else "broker.id"] = str(found.node_id)
        if found.directory_id is not None:
            props["directory.id"] = uuid_to_str(found.directory_id)
        body = ", ".join(f"{k}={props[k]}" for k in sorted(props))
        lines += [f"Found metadata: {{{body}}}", ""]
        if found.version == 0:
            problems.append(
                "The configuration file appears to be for a cluster in KRaft mode, but the directories are "
                "formatted for legacy mode."
            )
    if problems:
        lines.append("Found problem:" if len(problems) == 1 else "Found problems:")
        lines += [f"  {p}" for p in problems]
        lines.append("")
    return [line + "\n" for line in lines], problems


__all__ = ["main", "format_directory", "describe_directory"]
