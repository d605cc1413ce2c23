"""Fixtures shared by every test package.

``codec_path``: the codec round-trip and oracle modules opt in with ``pytestmark =
pytest.mark.usefixtures("codec_path")`` and then run twice, once on the compiled codec engine and once on the
pure-Python generated code (kwire/fastpath.py). Without the extension the compiled run skips, except under
CI=true, where it fails: CI must build and test both (:func:`require_compiled`).

The run raises its soft open-files limit to the hard one (tools.process_limits, as ``kraftd start`` and the
JVM of Kafka's processes do): the chaos harness's proxy and the processes the tests start inherit it.

A pytest run from an interpreter without the project's dependencies stops with one line naming them and the
command that installs them (``./test.sh``), not one import traceback per test module.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator

import pytest

# Import names of the runtime and test dependencies every test package needs (pyproject.toml).
_NEEDED = ("crc32c", "lz4", "click", "jinja2", "hypothesis", "kafka")


def pytest_configure(config: pytest.Config) -> None:
    missing = [m for m in _NEEDED if importlib.util.find_spec(m) is None]
    if missing:
        raise pytest.UsageError(
            f"missing {', '.join(missing)}: run ./test.sh (it installs .venv first) or .venv/bin/pytest"
        )


from kwire import compiled, fastpath, record_codec  # noqa: E402 - after the dependency check above
from tools.process_limits import raise_open_files_limit  # noqa: E402

raise_open_files_limit()


def require_compiled(available: bool) -> None:
    """Skip when a compiled extension is not built (or KRAFTD_PURE_PYTHON is set); under CI=true a missing
    one fails instead, since CI must build and test both paths."""
    if available:
        return
    if os.environ.get("CI") == "true" and not compiled.pure_forced():
        pytest.fail("kwire._fastcodec/_fastrecords is not built; under CI the compiled code must be tested")
    pytest.skip("kwire._fastcodec/_fastrecords is not built or KRAFTD_PURE_PYTHON is set")


@pytest.fixture(params=["compiled", "pure"])
def codec_path(request: pytest.FixtureRequest) -> Iterator[str]:
    want = request.param == "compiled"
    if want:
        require_compiled(fastpath.ENGINE is not None and record_codec.COMPILED is not None)
    before = fastpath.compiled()
    fastpath.set_compiled(want)
    try:
        yield request.param
    finally:
        fastpath.set_compiled(before)
