"""``kraftd``: run a controller (``kraftd start server.properties``) and generate load (``kraftd perf``).

Contracts:
1. ``start`` exits 1 with one clear line on stderr when the configuration or the storage is unusable
   (not formatted, wrong node id, locked), 0 after a graceful SIGTERM/SIGINT (the leader resigns first), and 2
   after a fatal storage error (a failed fsync stops the node rather than acknowledging anything).
2. ``start --load-ack-file F`` (hidden, for tests and bench/quorum.py) also runs kraftd.shell.loadgen while
   this node leads.
3. ``perf`` appends fixed-size records through the leader's RaftClient in-process and prints committed
   records per second; it is run against a node it starts itself from a server.properties.
"""

from __future__ import annotations

import asyncio
import json
import logging
import signal
import sys
import time
from pathlib import Path

import click

from kraftd.config import ConfigError, load_config
from kraftd.shell.loadgen import run_load
from kraftd.shell.node import ControllerNode
from kraftd.storage.errors import LogIOError, StorageError


@click.group(help="The kraftd KRaft controller.")
def main() -> None:
    pass


def _setup_logging(level: str) -> None:
    logging.basicConfig(
        level=getattr(logging, level.upper(), logging.INFO),
        format="[%(asctime)s] %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )


async def _run(node: ControllerNode, load: tuple[Path, int, int, int, bool] | None = None) -> int:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
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
    no_fsync: bool,
    load_ack_file: Path | None,
    load_in_flight: int,
    load_record_size: int,
    load_batch: int,
    load_noop_records: bool,
) -> None:
    _setup_logging(log_level)
    try:
        config = load_config(config_path)
        node = ControllerNode(config, fsync=not no_fsync)
        load = None
        if load_ack_file is not None:
            load = (load_ack_file, load_in_flight, load_record_size, load_batch, load_noop_records)
        code = asyncio.run(_run(node, load))
    except (ConfigError, StorageError) as exc:
        if isinstance(exc, LogIOError):
            click.echo(f"kraftd: fatal storage error: {exc}", err=True)
            sys.exit(2)
        click.echo(f"kraftd: cannot start: {exc}", err=True)
        sys.exit(1)
    sys.exit(code)


async def _perf(
    node: ControllerNode, records: int, size: int, in_flight: int, timeout: float
) -> dict[str, float]:
    await node.start()
    try:
        leader = await node.wait_for_leader(timeout)
        deadline = time.monotonic() + timeout
        while node.core.leader_id() != node.config.node_id:
            if time.monotonic() > deadline:
                raise click.ClickException(
                    f"node {node.config.node_id} is not the leader (leader {leader.leader_id})"
                )
            await asyncio.sleep(0.05)
        value = b"x" * size
        latencies: list[float] = []
        sent = 0

        async def worker() -> None:
            nonlocal sent
            while sent < records:
                sent += 1
                t0 = time.perf_counter()
                await node.append([value])
                latencies.append(time.perf_counter() - t0)

        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(in_flight)))
        elapsed = time.perf_counter() - start
        latencies.sort()
        return {
            "records": float(records),
            "seconds": elapsed,
            "records_per_sec": records / elapsed if elapsed else 0.0,
            "p50_ms": latencies[len(latencies) // 2] * 1000,
            "p99_ms": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000,
        }
    finally:
        await node.stop(graceful=True)


@main.command(help="Append records through this node's RaftClient (it must become the leader).")
@click.argument("config_path", metavar="SERVER_PROPERTIES")
@click.option("--records", default=10000, show_default=True)
@click.option("--record-size", default=100, show_default=True)
@click.option("--in-flight", default=1000, show_default=True, help="Appends awaiting commit at once.")
@click.option("--timeout", default=30.0, show_default=True)
@click.option("--json", "as_json", is_flag=True)
def perf(
    config_path: str, records: int, record_size: int, in_flight: int, timeout: float, as_json: bool
) -> None:
    _setup_logging("WARNING")
    try:
        node = ControllerNode(load_config(config_path))
        result = asyncio.run(_perf(node, records, record_size, in_flight, timeout))
    except (ConfigError, StorageError) as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        click.echo(json.dumps(result))
    else:
        click.echo(
            f"{int(result['records'])} records in {result['seconds']:.2f}s: {result['records_per_sec']:.0f} records/s, "
            f"p50 {result['p50_ms']:.2f} ms, p99 {result['p99_ms']:.2f} ms"
        )
