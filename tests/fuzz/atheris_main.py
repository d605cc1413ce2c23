"""Child process for one atheris target: ``python -m tests.fuzz.atheris_main TARGET WORKDIR CORPUS [libFuzzer args]``.

New interesting inputs go to WORKDIR (not the checked-in corpus); a crash is anything but a KraftError.
"""

from __future__ import annotations

import logging
import sys

import atheris

with atheris.instrument_imports():
    import generated  # noqa: F401
    import kraftd.config  # noqa: F401
    import kraftd.storage  # noqa: F401
    import kwire  # noqa: F401
    from tests.fuzz.targets import TARGETS

from kwire.errors import KraftError


def main() -> None:
    logging.disable(logging.CRITICAL)  # recovery warnings would flood libFuzzer's output
    name = sys.argv[1]
    target = TARGETS[name]

    def one(data: bytes) -> None:
        try:
            target(data)
        except KraftError:
            pass

    argv = [sys.argv[0], *sys.argv[4:], sys.argv[2], sys.argv[3]]
    atheris.Setup(argv, one)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
