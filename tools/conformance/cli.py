"""``kraft-conformance --bootstrap-controller host:port [--cluster-id ID] [--junit FILE] [--json] [--intrusive]``.

Contracts:
1. Exit status 0 when no check failed, 1 when any failed, 2 when the target could not be discovered (one-line
   error on stderr, no traceback).
2. ``--check PREFIX`` (repeatable) runs only the checks whose id starts with a prefix.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import click

from tools.conformance import checks_fetch, checks_protocol, checks_quorum, checks_raft, checks_voters  # noqa: F401
from tools.conformance.model import REGISTRY, Check, Result
from tools.conformance.report import json_report, junit_report, summary, text_report
from tools.conformance.runner import DiscoveryError, discover, run_all


def _selected(prefixes: tuple[str, ...]) -> list[Check]:
    return [c for c in REGISTRY if not prefixes or any(c.id.startswith(p) for p in prefixes)]


@click.command(help="Run the KRaft conformance battery against a controller quorum.")
@click.version_option(package_name="kraftd", prog_name="kraft-conformance")
@click.option("--bootstrap-controller", required=True, help="host:port of any controller.")
@click.option("--cluster-id", default=None, help="Expected cluster id (default: what DescribeCluster says).")
@click.option(
    "--junit", "junit", type=click.Path(dir_okay=False, path_type=Path), help="Write a JUnit XML report."
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document instead of text.")
@click.option(
    "--intrusive", is_flag=True, help="Also run checks that craft Raft messages (test quorums only)."
)
@click.option(
    "--check", "prefixes", multiple=True, help="Only checks whose id starts with this (repeatable)."
)
@click.option("--verbose", "-v", is_flag=True, help="Print the evidence of every check, not only failures.")
@click.option("--timeout", default=10.0, show_default=True, help="Seconds to wait for each response.")
def main(
    bootstrap_controller: str,
    cluster_id: str | None,
    junit: Path | None,
    as_json: bool,
    intrusive: bool,
    prefixes: tuple[str, ...],
    verbose: bool,
    timeout: float,
) -> None:
    host, _, port = bootstrap_controller.rpartition(":")
    if not host or not port.isdigit():
        raise click.BadParameter("expected host:port", param_hint="--bootstrap-controller")

    async def go() -> tuple[str, list[Result]]:
        ctx = await discover(host, int(port), cluster_id=cluster_id, intrusive=intrusive, timeout=timeout)
        return ctx.cluster_id, await run_all(ctx, _selected(prefixes))

    try:
        cid, results = asyncio.run(go())
    except DiscoveryError as exc:
        click.echo(f"kraft-conformance: {exc}", err=True)
        raise SystemExit(2) from None
    if as_json:
        click.echo(json_report(bootstrap_controller, cid, results), nl=False)
    else:
        click.echo(text_report(results, verbose=verbose), nl=False)
    if junit is not None:
        junit.write_text(junit_report(bootstrap_controller, results))
    if summary(results)["FAIL"]:
        raise SystemExit(1)
