"""kraftd's version, written in one place (pyproject.toml, ``[project] version``) and read here from the installed
distribution's metadata: what every CLI's ``--version`` prints and what kraftd sends as its ApiVersions
ClientSoftwareVersion. ``unknown`` (still valid for Kafka's ClientSoftwareVersion pattern) when never installed."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _version

try:
    VERSION = _version("kraftd")
except PackageNotFoundError:  # a checkout on sys.path that pip never installed
    VERSION = "unknown"
