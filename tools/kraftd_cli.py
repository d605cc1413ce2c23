"""``kraftd``: run a controller (``kraftd start server.properties``) and generate load (``kraftd perf``).

Contracts:
1. ``start`` exits 1 with one clear line on stderr when the configuration or the storage is unusable
   (not formatted, wrong node id, locked), 0 after a graceful SIGTERM/SIGINT (the leader resigns first), and 2
   after a fatal storage error (a failed fsync stops the node rather than acknowledging anything).
2. ``start --load-ack-file F`` (hidden, for tests and bench/quorum.py) also runs kraftd.shell.loadgen while
   this node leads.
3. ``perf --bootstrap-controller host:port`` is a client of a running quorum (tools.perf_client): it appends
   NoOpRecords through the leader over the wire and prints commit throughput and latency percentiles.
4. ``start`` fixes glibc's mmap threshold (:func:`tools.heap.unpooled_large_buffers`) at ``KRAFTD_MMAP_THRESHOLD`` bytes (1 MiB
   unless set; 0 leaves glibc's default) before anything else, so a freed buffer of 1 MiB or more (an observer's
   catch-up answer or snapshot chunk, up to 8 MiB) goes back to the system. glibc raises its threshold to the size
   of the largest mmapped block freed (up to 32 MiB), after which such buffers come from the heap and are kept
   there: a leader answering 1,000 brokers catching up at 1,000 x 1M grew from 1.3 to 2.3 GB in 300 s (followers
   flat); with the threshold fixed its RSS went up and down between 0.7 and 1.3 GB (docs/SWARM.md, session 16).
5. ``start`` raises the soft open-files limit to the hard one (:func:`tools.process_limits.raise_open_files_limit`,
   the JVM's ``MaxFDLimit`` for Kafka's controllers) and logs the change: a controller's connections and segments
   never stop at a login session's 1,024 while the system allows more.
"""

from __future__ import annotations

import asyncio
import json
import logging
import signal
import sys
from pathlib import Path

import click

from kraftd.config import ConfigError, load_config
from kraftd.shell.loadgen import run_load
from kraftd.shell.net.transport import ListenError
from kraftd.shell.node import ControllerNode
from kraftd.shell.observe.logging_setup import configure as configure_logging
from kraftd.storage.errors import LogIOError, StorageError
from kwire.errors import KraftError
from tools.heap import unpooled_large_buffers
from tools.perf_client import run_perf
from tools.process_limits import raise_open_files_limit
from tools.quorum_cli import parse_hosts

log = logging.getLogger("kraftd.main")


@click.group(help="The kraftd KRaft controller.")
@click.version_option(package_name="kraftd", prog_name="kraftd")
def main() -> None:
    pass


async def _run(node: ControllerNode, load: tuple[Path, int, int, int, bool] | None = None) -> int:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()

    def on_signal(sig: signal.Signals) -> None:
        log.info("received %s, stopping", sig.name)
        stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, on_signal, sig)
    await node.start()
    load_task = None
    if load is not None:
        path, in_flight, size, batch, noop = load
        load_task = asyncio.ensure_future(
            run_load(
                node, path, in_flight=in_flight, record_size=size, stop=stop, batch=batch, noop_frames=noop
            )
        )
    stopped = asyncio.ensure_future(node.wait_stopped())
    waiter = asyncio.ensure_future(stop.wait())
    await asyncio.wait({stopped, waiter}, return_when=asyncio.FIRST_COMPLETED)
    if load_task is not None:
        load_task.cancel()
    if waiter.done() and not stopped.done():
        await node.stop(graceful=True)
        stopped.cancel()
        return 0
    waiter.cancel()
    if stopped.done() and not stopped.cancelled():
        stopped.exception()  # retrieved: node.fatal already holds it
    return 2 if node.fatal is not None else 0


@main.command(help="Start a controller from a server.properties file.")
@click.argument("config_path", metavar="SERVER_PROPERTIES")
@click.option("--log-level", default="INFO", show_default=True)
@click.option(
    "--log-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Also write the log to DIR/server.log (rotated at 100 MB, 10 files kept).",
)
@click.option("--no-fsync", is_flag=True, hidden=True, help="Testing only: skip fsync.")
@click.option(
    "--load-ack-file", type=click.Path(path_type=Path), hidden=True, help="Generate load while leading."
)
@click.option("--load-in-flight", default=1, hidden=True)
@click.option("--load-record-size", default=100, hidden=True)
@click.option("--load-batch", default=1, hidden=True, help="Records per append.")
@click.option("--load-noop-records", is_flag=True, hidden=True, help="Values as framed NoOpRecords.")
def start(
    config_path: str,
    log_level: str,
    log_dir: Path | None,
    no_fsync: bool,
    load_ack_file: Path | None,
    load_in_flight: int,
    load_record_size: int,
    load_batch: int,
    load_noop_records: bool,
) -> None:
    unpooled_large_buffers()
    configure_logging(log_level, log_dir)
    raised = raise_open_files_limit()
    if raised is not None:
        log.info("open files limit raised from %d to %d (the hard limit)", *raised)
    try:
        config = load_config(config_path)
        node = ControllerNode(config, fsync=not no_fsync)
        load = None
        if load_ack_file is not None:
            load = (load_ack_file, load_in_flight, load_record_size, load_batch, load_noop_records)
        code = asyncio.run(_run(node, load))
    except (ConfigError, StorageError, ListenError) as exc:
        if isinstance(exc, LogIOError):
            click.echo(f"kraftd: fatal storage error: {exc}", err=True)
            sys.exit(2)
        click.echo(f"kraftd: cannot start: {exc}", err=True)
        sys.exit(1)
    sys.exit(code)


@main.command(help="Append NoOpRecords through the leader of a RUNNING quorum and report commit throughput.")
@click.option(
    "--bootstrap-controller",
    required=True,
    help="A comma-separated list of host:port pairs of the controllers (as kafka-metadata-quorum).",
)
@click.option("--records", default=10000, show_default=True, help="Records to commit.")
@click.option("--batch", default=1, show_default=True, help="Records per append request.")
@click.option("--in-flight", default=64, show_default=True, help="Append requests awaiting commit at once.")
@click.option("--timeout", default=60.0, show_default=True, help="Seconds for the whole run.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON line.")
def perf(
    bootstrap_controller: str, records: int, batch: int, in_flight: int, timeout: float, as_json: bool
) -> None:
    hosts = parse_hosts(bootstrap_controller)
    try:
        result = asyncio.run(
            run_perf(
                hosts, records=records, batch=max(1, batch), in_flight=max(1, in_flight), timeout=timeout
            )
        )
    except KraftError as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        click.echo(json.dumps(result))
    else:
        click.echo(
            f"{int(result['records'])} records committed in {result['seconds']:.2f}s: "
            f"{result['records_per_sec']:.0f} records/s; commit latency p50 {result['p50_ms']:.2f} ms, "
            f"p95 {result['p95_ms']:.2f} ms, p99 {result['p99_ms']:.2f} ms, max {result['max_ms']:.2f} ms "
            f"({int(result['appends'])} appends of up to {batch} records, {int(result['retries'])} retried)"
        )
