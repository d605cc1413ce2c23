"""Spark pipeline benchmark: the ``kraft`` source and a simulator sweep on local[1], local[2] and a 2-worker Spark
standalone cluster (a master and two 1-core workers on loopback, kraft_spark.standalone), against a single-process
decode loop over the same files and ``python -m kraftd.sim --workers 2``, measured in one run.

    python bench/spark.py                 # a table
    python bench/spark.py --json          # one machine-readable line
    python bench/spark.py --records 400000 --seeds 400
    python bench/spark.py --masters local[1],local[2]    # skip the cluster

The load average (1 min) is reported before and after every measurement: the machine may be shared.

Spark session start-up is reported on its own line and is not in any rate. Every Spark rate is the best of
``--repeat`` timed runs after warm-up runs (which start the Python workers). The DataFrame is fully
materialised (every column, the ``noop`` sink), not just counted. On local masters the CPU seconds of the driver's
JVM and of its Python workers are reported too, the median of the timed passes (``*_decode_cpu_*``,
``*_sweep_cpu_*``, ``*_decode_cores_used``; the CLI's own and its pool's: ``cli_sweep_workers2_cpu_s``):
local[1] runs the Python worker and the JVM side of the same task concurrently, so it already uses more than one
core (docs/PERFORMANCE.md, "Spark").
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if str(Path(__file__).resolve().parent.parent) not in sys.path:  # PYTHONPATH may name another kraft_spark
    sys.path.append(str(Path(__file__).resolve().parent.parent))

from generated.leader_change_message import LeaderChangeMessage, Voter  # noqa: E402
from kraft_spark.decode import decode_file, find_files  # noqa: E402
from kraftd.storage.log import MetadataLog  # noqa: E402
from kwire.control import ControlRecordType, control_key  # noqa: E402
from kwire.records import Record, build_batch, build_data_batch  # noqa: E402

NO_OP = bytes([1, 20, 0, 0])
FEATURE = bytes([1, 12, 0, len("metadata.version") + 1]) + b"metadata.version" + b"\x00\x1e\x00"


def make_logs(root: Path, records: int, segments: int) -> Path:
    """``records`` records over about ``segments`` segment files: batches of 50 metadata records, and a
    LeaderChange control batch every 20 batches."""
    part = root / "n1" / "__cluster_metadata-0"
    part.mkdir(parents=True)
    (root / "n1" / "meta.properties").write_text("version=1\nnode.id=1\ncluster.id=bench\n")
    per_batch = 50
    approx_bytes = records * (len(NO_OP) + 8) + records // per_batch * 61
    log = MetadataLog(part, max(approx_bytes // segments, 4096), fsync=False)
    offset, epoch, n = 0, 1, 0
    lc = LeaderChangeMessage(0, 1, [Voter(1), Voter(2), Voter(3)], [Voter(1), Voter(2)])
    while offset < records:
        if n % 20 == 0:
            rec = Record(0, 0, control_key(ControlRecordType.LEADER_CHANGE), lc.encode(0))
            log.append(
                build_batch(
                    [rec],
                    base_offset=offset,
                    partition_leader_epoch=epoch,
                    base_timestamp=offset,
                    is_control=True,
                )
            )
            offset += 1
        values = [FEATURE if i % 10 == 0 else NO_OP for i in range(per_batch)]
        log.append(
            build_data_batch(values, base_offset=offset, partition_leader_epoch=epoch, timestamp=offset)
        )
        offset += per_batch
        n += 1
    log.flush()
    log.close()
    return root


def single_process(root: Path, repeat: int) -> tuple[int, float]:
    best = float("inf")
    count = 0
    for _ in range(repeat):
        start = time.perf_counter()
        count = sum(1 for f in find_files(root) for _ in decode_file(f))
        best = min(best, time.perf_counter() - start)
    return count, best


def _python_half(paths: list[str]) -> int:
    """What a Python worker does for its tasks: decode the files into Arrow batches (kraft_spark.batches)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    from kraft_spark.batches import file_batches
    from kraft_spark.source import row_schema

    arrow, n = to_arrow_schema(row_schema()), 0
    for f in find_files_of(paths):
        n += sum(b.num_rows for b in file_batches(f, arrow, 4096))
    return n


def find_files_of(paths: list[str]) -> list[Any]:
    return [f for p in paths for f in find_files(p)]


def pure_cpu_scaling(root: Path, repeat: int) -> tuple[float, float]:
    """(1-process, 2-process) seconds of the Python half of the decode (no Spark, no JVM): the files dealt
    round-robin to a pool of 2 forked processes against the same work in 1. Their ratio is what 2 cores give
    pure CPU-bound Python work at this moment's load, the most local[2] / local[1] could show."""
    import multiprocessing as mp

    paths = [f.path for f in find_files(root)]
    best1 = best2 = float("inf")
    ctx = mp.get_context("fork")
    with ctx.Pool(2) as pool:
        pool.map(_python_half, [paths[:1], paths[1:2]])  # imports done in both workers
        for _ in range(repeat):
            start = time.perf_counter()
            pool.apply(_python_half, (paths,))
            best1 = min(best1, time.perf_counter() - start)
            start = time.perf_counter()
            pool.map(_python_half, [paths[0::2], paths[1::2]])
            best2 = min(best2, time.perf_counter() - start)
    return best1, best2


def _cpu(pid: int, *, reaped: bool = False) -> float:
    """CPU seconds (user + system, all threads) of one process, plus with ``reaped`` those of its children that
    exited and were waited for (cutime, cstime); 0 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    ticks = int(fields[11]) + int(fields[12]) + (int(fields[13]) + int(fields[14]) if reaped else 0)
    return ticks / os.sysconf("SC_CLK_TCK")


def cpu_split(spark: Any) -> tuple[float, float]:
    """(JVM, Python workers) CPU seconds so far: the driver's JVM and every process below it (local mode's
    Python workers are its descendants; pyspark's daemon reaps the workers that exit, so their CPU stays
    counted in its cutime/cstime rather than vanishing from a pass)."""
    jvm = spark.sparkContext._gateway.proc.pid
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parents[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
    below: set[int] = set()
    frontier = {jvm}
    while frontier:
        frontier = {p for p, pp in parents.items() if pp in frontier} - below
        below |= frontier
    return _cpu(jvm), sum(_cpu(p, reaped=True) for p in below)


def _passes(spark: Any, run: Any, repeat: int) -> tuple[float, float, float]:
    """(best seconds, median JVM CPU s, median Python CPU s) of ``repeat`` timed runs of ``run()``."""
    walls, jvms, pys = [], [], []
    for _ in range(repeat):
        jvm0, py0 = cpu_split(spark)
        start = time.perf_counter()
        run()
        walls.append(time.perf_counter() - start)
        jvm1, py1 = cpu_split(spark)
        jvms.append(jvm1 - jvm0)
        pys.append(py1 - py0)
    return min(walls), statistics.median(jvms), statistics.median(pys)


def spark_decode(spark: Any, root: Path, repeat: int) -> tuple[int, float, float, float]:
    """(rows, best seconds, median JVM and Python CPU seconds of a timed pass)."""
    df = spark.read.format("kraft").load(str(root))
    # Warm-up: the Python workers start and the JVM compiles the conversion (the JVM outlives a session, so
    # without warm passes a later master would start warmer than the first; C2 still compiles ~0.5 CPU s per
    # pass in the second and third).
    for _ in range(4):
        df.write.format("noop").mode("overwrite").save()
    best, jvm, py = _passes(spark, lambda: df.write.format("noop").mode("overwrite").save(), repeat)
    return df.count(), best, jvm, py


def spark_sweep(spark: Any, seeds: int, repeat: int) -> tuple[float, float, float]:
    """(seeds/s of the best run, median JVM and Python CPU seconds of a run)."""
    from kraft_spark.sweep import sweep

    warm = 4 * spark.sparkContext.defaultParallelism  # every Python worker imports the simulator here
    sweep(spark, range(0, warm)).write.format("noop").mode("overwrite").save()

    def run() -> None:
        sweep(spark, range(0, seeds)).write.format("noop").mode("overwrite").save()

    best, jvm, py = _passes(spark, run, repeat)
    return seeds / best, jvm, py


def cli_sweep(seeds: int) -> tuple[float, float]:
    """(seeds/s the CLI prints, CPU seconds of the CLI and its pool)."""
    cmd = [sys.executable, "-m", "kraftd.sim", "--seeds", f"0-{seeds - 1}", "--workers", "2"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    m = re.search(r"([\d.]+) seeds/s", done.stdout)
    if m is None:
        raise SystemExit(f"kraftd.sim printed no rate: {done.stdout[-500:]} {done.stderr[-500:]}")
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return float(m.group(1)), cpu


def load() -> float:
    return round(os.getloadavg()[0], 2)


def on_master(
    name: str, url: str, root: Path, rows: int, args: argparse.Namespace, out: dict[str, Any]
) -> None:
    from kraft_spark.session import build_session

    start = time.perf_counter()
    spark = build_session(url, "bench-spark")
    spark.range(1).count()
    out[f"{name}_startup_s"] = time.perf_counter() - start
    out[f"{name}_load_before"] = load()
    n, secs, jvm, py = spark_decode(spark, root, args.repeat)
    assert n == rows, f"Spark saw {n} rows, the loop {rows}"
    out[f"{name}_rows_per_s"] = n / secs
    out[f"{name}_decode_wall_s"] = secs
    if not url.startswith("spark://"):  # executors of a cluster are not the driver's descendants
        out[f"{name}_decode_cpu_jvm_s"], out[f"{name}_decode_cpu_python_s"] = jvm, py
        out[f"{name}_decode_cores_used"] = (jvm + py) / secs  # local[1] pipelines JVM and Python: > 1 core
    rate, jvm, py = spark_sweep(spark, args.seeds, args.repeat)
    out[f"{name}_sweep_seeds_per_s"] = rate
    if not url.startswith("spark://"):
        out[f"{name}_sweep_cpu_jvm_s"], out[f"{name}_sweep_cpu_python_s"] = jvm, py
    out[f"{name}_load_after"] = load()
    spark.stop()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--records", type=int, default=200_000)
    p.add_argument("--segments", type=int, default=8)
    p.add_argument("--seeds", type=int, default=200)
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--masters", default="local[1],local[2],cluster")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    import kraft_spark
    from kraft_spark.standalone import StandaloneCluster

    out: dict[str, Any] = {"records": args.records, "seeds": args.seeds, "cpus": os.cpu_count()}
    out["kraft_spark"] = str(Path(kraft_spark.__file__).parent)
    out["load_start"] = load()
    with tempfile.TemporaryDirectory() as tmp:
        root = make_logs(Path(tmp) / "logs", args.records, args.segments)
        out["files"] = len(find_files(root))
        rows, secs = single_process(root, args.repeat)
        out["rows"] = rows
        out["single_process_rows_per_s"] = rows / secs
        out["load_before_pure_cpu"] = load()
        one, two = pure_cpu_scaling(root, args.repeat)
        out["pure_cpu_python_half_1proc_s"], out["pure_cpu_python_half_2proc_s"] = one, two
        out["pure_cpu_2proc_vs_1proc"] = one / two
        for name in args.masters.split(","):
            if name == "cluster":
                with StandaloneCluster(Path(tmp) / "cluster", 2, cores=1, memory="1g") as cluster:
                    on_master(name, cluster.url, root, rows, args, out)
            else:
                on_master(name, name, root, rows, args, out)
    out["cli_sweep_workers2_seeds_per_s"], out["cli_sweep_workers2_cpu_s"] = cli_sweep(args.seeds)
    out["load_end"] = load()
    base = out.get("local[1]_rows_per_s")
    for name in args.masters.split(","):
        out[f"decode_{name}_vs_single"] = out[f"{name}_rows_per_s"] / out["single_process_rows_per_s"]
        if base:
            out[f"decode_{name}_vs_local[1]"] = out[f"{name}_rows_per_s"] / base
        out[f"sweep_{name}_vs_cli"] = out[f"{name}_sweep_seeds_per_s"] / out["cli_sweep_workers2_seeds_per_s"]
    if "local[1]_decode_cpu_jvm_s" in out:
        # On 2 otherwise idle cores local[1] overlaps its JVM and its Python worker (a pass takes about the larger
        # of the two), while local[2] at best splits their sum over the 2 cores: the most local[2] / local[1] can
        # reach there (docs/PERFORMANCE.md, "Spark"). On a loaded machine pure_cpu_2proc_vs_1proc is the bound.
        jvm, py = out["local[1]_decode_cpu_jvm_s"], out["local[1]_decode_cpu_python_s"]
        out["decode_local[2]_vs_local[1]_ceiling_idle_2cores"] = 2 * max(jvm, py) / (jvm + py)
    if args.json:
        print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in out.items()}))
        return
    for k, v in out.items():
        print(f"{k:36} {v:,.2f}" if isinstance(v, float) else f"{k:36} {v}")


if __name__ == "__main__":
    main()
