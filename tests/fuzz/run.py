"""The long fuzz run: ``python -m tests.fuzz.run --minutes N [--target NAME]`` (scripts/fuzz.sh wraps it).

Each target gets an equal share of the time under atheris (coverage-guided, libFuzzer) when it is installed,
seeded from tests/fuzz/corpus/<target>; without atheris a seeded random mutator over the same corpus runs
instead and says so. A crash (anything but a KraftError escaping, contract 1 of tests.fuzz.targets) is written
to tests/fuzz/crashes/<target>-<sha1> and the run exits 1 after the remaining targets ran; the file replays with
``python -m tests.fuzz.run --replay FILE --target NAME``.
"""

from __future__ import annotations

import hashlib
import os
import random
import subprocess
import sys
import time
import traceback
from pathlib import Path

import click

from kwire.errors import KraftError
from tests.fuzz.targets import TARGETS

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
CRASHES = HERE / "crashes"


def seeds(target: str) -> list[bytes]:
    d = CORPUS / target
    return [p.read_bytes() for p in sorted(d.iterdir())] if d.is_dir() else []


def mutate(rng: random.Random, data: bytes) -> bytes:
    """Byte flips, insertions, deletions, splices and 'interesting' integers, a few at a time."""
    buf = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(6)
        pos = rng.randrange(len(buf) + 1)
        if op == 0 and buf:
            buf[min(pos, len(buf) - 1)] ^= 1 << rng.randrange(8)
        elif op == 1:
            buf[pos:pos] = rng.randbytes(rng.randint(1, 8))
        elif op == 2 and buf:
            del buf[pos : pos + rng.randint(1, 16)]
        elif op == 3:
            v = rng.choice([0, 1, -1, 0x7F, 0x80, 0xFF, 0x7FFF, 0x8000, 0x7FFFFFFF, -0x80000000, 0xFFFFFFFF])
            buf[pos : pos + 4] = (v & 0xFFFFFFFF).to_bytes(4, "big")
        elif op == 4 and buf:
            buf[pos:] = buf[pos:][: rng.randrange(len(buf) - pos + 1)]
        else:
            buf[pos:pos] = bytes([rng.choice([0, 0xFF, 0x80, 0x7F])]) * rng.randint(1, 6)
    return bytes(buf)


def check(target: str, data: bytes) -> str | None:
    """None when the target behaved (returned or raised a KraftError), else the traceback."""
    try:
        TARGETS[target](data)
    except KraftError:
        return None
    except Exception:  # noqa: BLE001 - contract: anything else is a crash
        return traceback.format_exc()
    return None


def save_crash(target: str, data: bytes, trace: str) -> Path:
    CRASHES.mkdir(exist_ok=True)
    path = CRASHES / f"{target}-{hashlib.sha1(data).hexdigest()[:12]}"
    path.write_bytes(data)
    path.with_suffix(".txt").write_text(trace)
    return path


def random_run(target: str, seconds: float, seed: int) -> tuple[int, list[Path]]:
    rng = random.Random(seed)
    pool = seeds(target) or [b""]
    crashes: list[Path] = []
    n = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        data = mutate(rng, rng.choice(pool)) if rng.random() < 0.9 else rng.randbytes(rng.randint(0, 256))
        n += 1
        trace = check(target, data)
        if trace is not None:
            crashes.append(save_crash(target, data, trace))
            if len(crashes) >= 20:
                break
    return n, crashes


def atheris_run(target: str, seconds: float) -> int:
    """libFuzzer in a child process (it owns the process); returns its exit code."""
    work = HERE / "work" / target
    work.mkdir(parents=True, exist_ok=True)
    CRASHES.mkdir(exist_ok=True)
    corpus_dir = CORPUS / target
    corpus_dir.mkdir(parents=True, exist_ok=True)
    cmd = [
        sys.executable,
        "-m",
        "tests.fuzz.atheris_main",
        target,
        str(work),
        str(corpus_dir),
        f"-max_total_time={max(1, int(seconds))}",
        "-rss_limit_mb=1024",
        "-max_len=65536",
        f"-artifact_prefix={CRASHES}/{target}-",
        "-print_final_stats=1",
    ]
    return subprocess.run(cmd, cwd=HERE.parents[1]).returncode


def have_atheris() -> bool:
    try:
        import atheris  # noqa: F401
    except ImportError:
        return False
    return True


@click.command()
@click.option("--minutes", default=1.0, show_default=True, help="Total time, split over the targets.")
@click.option("--target", "only", multiple=True, type=click.Choice(sorted(TARGETS)))
@click.option("--engine", type=click.Choice(["auto", "atheris", "random"]), default="auto", show_default=True)
@click.option("--seed", default=0, show_default=True, help="For the random engine.")
@click.option("--replay", type=click.Path(exists=True, path_type=Path), help="Run one input and exit.")
def main(minutes: float, only: tuple[str, ...], engine: str, seed: int, replay: Path | None) -> None:
    targets = list(only) or sorted(TARGETS)
    if replay is not None:
        trace = check(targets[0], replay.read_bytes())
        click.echo(trace or "ok: only typed errors")
        sys.exit(1 if trace else 0)
    share = minutes * 60 / len(targets)
    use_atheris = engine == "atheris" or (engine == "auto" and have_atheris())
    if engine == "auto" and not use_atheris:
        click.echo("fuzz: atheris is not installed; running the seeded random mutator instead")
    failed = []
    for t in targets:
        if use_atheris:
            code = atheris_run(t, share)
            click.echo(f"fuzz {t}: atheris exit {code}")
            if code != 0:
                failed.append(t)
        else:
            n, crashes = random_run(t, share, seed)
            click.echo(f"fuzz {t}: {n} inputs, {len(crashes)} crashes")
            for c in crashes:
                click.echo(f"  {c}")
            if crashes:
                failed.append(t)
    if failed:
        click.echo(f"fuzz: crashes in {', '.join(failed)} (inputs under {CRASHES})")
        sys.exit(1)
    os.environ.setdefault("KRAFTD_FUZZ_DONE", "1")


if __name__ == "__main__":
    main()
