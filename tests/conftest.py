"""Fixtures shared by every test package.

``codec_path``: the codec round-trip and oracle modules opt in with ``pytestmark =
pytest.mark.usefixtures("codec_path")`` and then run twice, once on the compiled codec engine and once on the
pure-Python generated code (kwire/fastpath.py). Without the extension the compiled run skips, except under
CI=true, where it fails: CI must build and test both.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from kwire import fastpath, record_codec


@pytest.fixture(params=["compiled", "pure"])
def codec_path(request: pytest.FixtureRequest) -> Iterator[str]:
    want = request.param == "compiled"
    if want and (fastpath.ENGINE is None or record_codec.COMPILED is None):
        if os.environ.get("CI") == "true" and os.environ.get("KRAFTD_PURE_PYTHON", "") in ("", "0"):
            pytest.fail(
                "kwire._fastcodec/_fastrecords is not built; under CI the compiled codec must be tested"
            )
        pytest.skip("kwire._fastcodec/_fastrecords is not built or KRAFTD_PURE_PYTHON is set")
    before = fastpath.compiled()
    fastpath.set_compiled(want)
    try:
        yield request.param
    finally:
        fastpath.set_compiled(before)
