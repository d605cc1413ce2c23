"""Builds the optional compiled codec (kwire/_fastcodec.pyx, kwire/_fastrecords.pyx) and the leader's fsync loop
(kraftd/shell/raft/_syncloop.pyx); the rest is in pyproject.toml.

Without Cython or a C compiler, or when KRAFTD_PURE_PYTHON is set, the build prints one line and installs the
pure-Python package only: kwire.fastpath then keeps the generated pure-Python codec (the reference path).
"""

from __future__ import annotations

import os
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

NOTE = "kraftd: compiled codec not built ({}); the pure-Python codec will be used"


class OptionalBuildExt(build_ext):
    """A failed compile is not a failed install: the pure-Python codec is complete on its own."""

    failed = False

    def run(self) -> None:
        try:
            super().run()
        except Exception as e:  # noqa: BLE001 - any compiler/toolchain failure means "pure Python"
            if not self.failed:
                print(NOTE.format(f"{type(e).__name__}: {e}"), file=sys.stderr)

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as e:  # noqa: BLE001
            self.failed = True
            print(NOTE.format(f"{type(e).__name__}: {e}"), file=sys.stderr)
            raise


def ext_modules() -> list[Extension]:
    if os.environ.get("KRAFTD_PURE_PYTHON", "") not in ("", "0"):
        print(NOTE.format("KRAFTD_PURE_PYTHON is set"), file=sys.stderr)
        return []
    try:
        from Cython.Build import cythonize
    except ImportError:
        print(NOTE.format("Cython is not installed"), file=sys.stderr)
        return []
    exts = [
        Extension(f"kwire.{name}", [f"kwire/{name}.pyx"], extra_compile_args=["-O2"])
        for name in ("_fastcodec", "_fastrecords")
    ]
    # The leader's GIL-free fsync loop (kraftd.shell.raft.syncthread); without it the flush thread is Python.
    exts.append(
        Extension(
            "kraftd.shell.raft._syncloop", ["kraftd/shell/raft/_syncloop.pyx"], extra_compile_args=["-O2"]
        )
    )
    return list(cythonize(exts, language_level=3, quiet=True))


setup(ext_modules=ext_modules(), cmdclass={"build_ext": OptionalBuildExt})
