"""``python -m codegen [--check] [--specs DIR] [--out DIR] [--package NAME]``.

Exit status: 0 on success (or nothing stale with --check); 1 when --check finds stale/missing/extra files;
2 when a spec is invalid or generation fails. --check never writes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from codegen.emit import CodegenError, diff, generate, sync
from codegen.model import SpecError

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m codegen", description=__doc__)
    ap.add_argument("--specs", type=Path, default=ROOT / "messages", help="directory of *.json specs")
    ap.add_argument("--out", type=Path, default=ROOT / "generated", help="output package directory")
    ap.add_argument("--package", default="generated", help="import name of the output package")
    ap.add_argument(
        "--check", action="store_true", help="report stale files and exit non-zero; write nothing"
    )
    args = ap.parse_args(argv)
    try:
        files = generate(args.specs, args.package)
    except (SpecError, CodegenError) as e:
        print(f"codegen: error: {e}", file=sys.stderr)
        return 2
    if args.check:
        problems = diff(args.out, files)
        for p in problems:
            print(p, file=sys.stderr)
        if problems:
            print(
                f"codegen: {len(problems)} generated file(s) out of date; run `python -m codegen`",
                file=sys.stderr,
            )
            return 1
        return 0
    for change in sync(args.out, files):
        print(change)
    return 0


if __name__ == "__main__":
    sys.exit(main())
