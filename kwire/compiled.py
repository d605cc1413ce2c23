"""Loading the optional compiled extensions (kwire/_fastcodec.pyx, kwire/_fastrecords.pyx; built by setup.py).

Contracts:
1. ``KRAFTD_PURE_PYTHON`` set to anything but "" or "0" means no compiled module is loaded (:func:`pure_forced`).
2. :func:`load` returns the built extension ``kwire.<name>``, or None (one INFO line) when it is absent: the
   pure-Python code beside it is complete on its own and stays the reference.
"""

from __future__ import annotations

import importlib
import logging
import os
from types import ModuleType

_log = logging.getLogger("kraftd.codec")


def pure_forced() -> bool:
    """Contract 1."""
    return os.environ.get("KRAFTD_PURE_PYTHON", "") not in ("", "0")


def load(name: str) -> ModuleType | None:
    """Contract 2."""
    if pure_forced():
        return None
    try:
        return importlib.import_module(f"kwire.{name}")
    except ImportError as e:
        _log.info("compiled kwire.%s not available (%s); using the pure-Python code", name, e)
        return None
