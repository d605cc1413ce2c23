"""Opening a report in headless Chromium (Debian's ``chromium``): a screenshot, and every image's load state read
back from the live DOM (``img.complete && img.naturalWidth > 0``) through ``--dump-dom``."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.spark.conftest import CI

_PROBE = """<script>
window.addEventListener("load", () => {
  const imgs = Array.from(document.images);
  document.body.setAttribute("data-probe", JSON.stringify({
    images: imgs.map(i => [i.alt, i.complete && i.naturalWidth > 0, i.naturalWidth, i.naturalHeight]),
    height: document.documentElement.scrollHeight,
    text: document.body.innerText.length,
  }));
});
</script>"""


def _browser() -> str:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        if CI:
            pytest.fail("chromium is required under CI (scripts/setup.sh installs it)", pytrace=False)
        pytest.skip("chromium is not installed (scripts/setup.sh installs it where apt-get is available)")
    return browser


def _run(args: list[str], url: str) -> str:
    base = [_browser(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"]
    done = subprocess.run([*base, *args, url], capture_output=True, text=True, timeout=120, check=False)
    return done.stdout


def probe(page: Path) -> dict[str, object]:
    """What Chromium sees on ``page``: each image's (alt, loaded, width, height), page height, text length."""
    copy = page.with_name(page.stem + ".probe.html")
    copy.write_text(page.read_text().replace("</body>", _PROBE + "</body>"), encoding="utf-8")
    dom = _run(["--dump-dom", "--virtual-time-budget=10000"], copy.as_uri())
    copy.unlink()
    m = re.search(r'data-probe="([^"]*)"', dom)
    assert m, f"Chromium did not run the probe: {dom[-300:]}"
    import html

    result: dict[str, object] = json.loads(html.unescape(m.group(1)))
    return result


def screenshot(page: Path, shot: Path, width: int = 1200, height: int = 3000) -> None:
    _run([f"--screenshot={shot}", f"--window-size={width},{height}"], page.as_uri())
    assert shot.exists(), "Chromium wrote no screenshot"
