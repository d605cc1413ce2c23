"""Histories for the linearizability checker (tools.lincheck) from real kraftd processes under faults.

Contracts:
1. ``clients`` asyncio clients share one monotonic clock. Each loops: a write (IncrementalAlterConfigs SET of a
   unique value, sent to the controller it believes leads) or a read (DescribeConfigs of the whole resource from
   a controller picked at random, every controller in turn). A write answered with error 0 is acknowledged; any
   other outcome is unknown (it may have been appended before the error). A read answered with error 0 yields
   one read per key of the model; any other read is dropped (contract 1 of tools.lincheck).
2. The model is the config map of BROKER resource "1" (keys ``k0``.. ``k{keys-1}``): kraftd's controller only
   takes topic configs for topics that exist, which needs registered brokers; broker configs are the same
   ConfigRecords through the same code path.
3. Faults run on the calling thread while the clients run on their own: partition of the leader, isolation of a
   follower, SIGSTOP of the leader, kill -9 of the leader (restarted), each followed by a heal and a wait for
   a leader.
"""

from __future__ import annotations

import asyncio
import random
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from generated.describe_configs_request import DescribeConfigsRequest, DescribeConfigsResource
from generated.incremental_alter_configs_request import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
)
from kwire.client import KafkaClient
from tests.chaos.cluster import ChaosCluster
from tools.lincheck import READ, WRITE, Op

BROKER, RESOURCE = 4, "1"
CLIENT_TIMEOUT_S = 4.0


@dataclass
class Run:
    ops: list[Op] = field(default_factory=list)
    reads_ok: int = 0
    reads_failed: int = 0
    writes_ok: int = 0
    writes_unknown: int = 0
    faults: list[str] = field(default_factory=list)


async def _client(
    cid: int, ports: dict[int, int], keys: int, stop: threading.Event, run: Run, seed: int
) -> None:
    rng = random.Random(seed * 1000 + cid)
    conns = {
        i: KafkaClient(
            "127.0.0.1", p, client_id=f"lin-{cid}", request_timeout=CLIENT_TIMEOUT_S, connect_timeout=1.0
        )
        for i, p in ports.items()
    }
    leader = min(ports)
    n = 0
    try:
        while not stop.is_set():
            if rng.random() < 0.35:
                n += 1
                key, value = f"k{rng.randrange(keys)}", f"{cid}-{n}"
                req = IncrementalAlterConfigsRequest(
                    resources=[
                        AlterConfigsResource(
                            resource_type=BROKER,
                            resource_name=RESOURCE,
                            configs=[AlterableConfig(name=key, config_operation=0, value=value)],
                        )
                    ]
                )
                call = time.monotonic()
                try:
                    resp = await asyncio.wait_for(conns[leader].send(req), CLIENT_TIMEOUT_S)
                    code = resp.responses[0].error_code
                except Exception:  # noqa: BLE001 - any failure is an unknown outcome (contract 1)
                    code = -1
                ret = time.monotonic()
                if code == 0:
                    run.writes_ok += 1
                    run.ops.append(Op(cid, WRITE, key, value, call, ret))
                else:
                    run.writes_unknown += 1
                    run.ops.append(Op(cid, WRITE, key, value, call, None))
                    leader = rng.choice(sorted(ports))
                    await asyncio.sleep(0.05)
            else:
                node = rng.choice(sorted(ports))
                dreq = DescribeConfigsRequest(
                    resources=[
                        DescribeConfigsResource(
                            resource_type=BROKER, resource_name=RESOURCE, configuration_keys=None
                        )
                    ]
                )
                call = time.monotonic()
                try:
                    dresp = await asyncio.wait_for(conns[node].send(dreq), CLIENT_TIMEOUT_S)
                    result = dresp.results[0]
                except Exception:  # noqa: BLE001 - an unanswered read carries nothing
                    result = None
                ret = time.monotonic()
                if result is None or result.error_code != 0:
                    run.reads_failed += 1
                    await asyncio.sleep(0.02)
                    continue
                run.reads_ok += 1
                seen = {c.name: c.value for c in result.configs}
                for k in range(keys):
                    run.ops.append(Op(cid, READ, f"k{k}", seen.get(f"k{k}"), call, ret))
    finally:
        for c in conns.values():
            try:
                await c.close()
            except Exception:  # noqa: BLE001 - closing is best effort
                pass


def _leader(cluster: ChaosCluster, timeout: float = 20.0) -> int:
    info = cluster.wait_leader(timeout)
    assert info is not None, "no leader"
    return info.leader_id


def _faults(cluster: ChaosCluster, run: Run, hold: float) -> None:
    """Contract 3."""
    time.sleep(hold)
    lead = _leader(cluster)
    run.faults.append(f"partition leader {lead}")
    cluster.isolate(lead)
    time.sleep(hold * 1.5)
    cluster.heal()
    _leader(cluster)
    follower = next(i for i in cluster.ids if i != _leader(cluster))
    run.faults.append(f"isolate follower {follower}")
    cluster.isolate(follower)
    time.sleep(hold)
    cluster.heal()
    time.sleep(hold / 2)
    lead = _leader(cluster)
    run.faults.append(f"SIGSTOP leader {lead}")
    cluster.send_signal(lead, signal.SIGSTOP)
    time.sleep(hold * 1.5)
    cluster.send_signal(lead, signal.SIGCONT)
    _leader(cluster)
    lead = _leader(cluster)
    run.faults.append(f"kill -9 leader {lead}")
    cluster.kill(lead)
    time.sleep(hold)
    cluster.start(lead, load=False)
    _leader(cluster)
    time.sleep(hold / 2)


def record_history(
    root: Path,
    *,
    nodes: int,
    consistency: str,
    clients: int = 8,
    keys: int = 3,
    hold: float = 2.0,
    seed: int = 1,
) -> Run:
    """Run the workload against a fresh quorum while the fault schedule runs; returns the recorded history."""
    root.mkdir(parents=True, exist_ok=True)
    cluster = ChaosCluster(root, nodes)
    for i in cluster.ids:
        path = cluster.config(i)
        path.write_text(path.read_text() + f"kraftd.read.consistency={consistency}\n")
    run = Run()
    stop = threading.Event()
    try:
        for i in cluster.ids:
            cluster.start(i, load=False)
        _leader(cluster, 30)

        async def workload() -> None:
            await asyncio.gather(*(_client(c, cluster.ports, keys, stop, run, seed) for c in range(clients)))

        thread = threading.Thread(target=lambda: asyncio.run(workload()), name="lin-clients", daemon=True)
        thread.start()
        try:
            _faults(cluster, run, hold)
        finally:
            stop.set()
            thread.join(CLIENT_TIMEOUT_S * 3)
        assert not thread.is_alive(), "clients did not stop"
    finally:
        cluster.close()
    return run
