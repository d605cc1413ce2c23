"""Switch between the generated pure-Python codec and the compiled engine (``kwire._fastcodec``).

Contracts:
1. The pure-Python generated code is the reference: the compiled engine returns the same bytes and equal
   objects, and anything it declines (unusual values, unknown tagged fields to write, malformed input, any
   error) reruns the pure-Python method, so errors are always the pure path's (kwire/_fastcodec.pyx, 2).
2. ``KRAFTD_PURE_PYTHON`` (kwire.compiled contract 1) keeps every class on the pure-Python code. When the
   extension was not built (no Cython or no C compiler at install time, or a failed build), one log line says
   so and the pure-Python code runs.
3. Generated modules call :func:`install` with their top-level class once ``FIELDS`` is filled in;
   :func:`set_compiled` swaps every installed class between the two paths (the tests run both).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any
from uuid import UUID

from kwire import codec, record_codec
from kwire import compiled as compiled_ext

__all__ = ["ENGINE", "compiled", "fallback_count", "install", "pure_method", "set_compiled"]

_METHODS = ("encode", "write", "decode", "read")


def _load() -> ModuleType | None:
    engine = compiled_ext.load("_fastcodec")
    if engine is not None:
        engine.configure(codec.UUID_CACHE, codec.uuid_from_bytes, UUID)
    return engine


ENGINE = _load()
# class -> method name -> attribute value, for each path
_PURE: dict[type, dict[str, Any]] = {}
_FAST: dict[type, dict[str, Any]] = {}
_state = {"compiled": ENGINE is not None}


def install(cls: type) -> None:
    """Route ``cls``'s encode/write/decode/read through the compiled engine (when it is available)."""
    if ENGINE is None:
        return
    pure = {name: cls.__dict__[name] for name in _METHODS}
    c = ENGINE.register(cls)
    c.pure_encode = pure["encode"]
    c.pure_write = pure["write"]
    c.pure_decode = pure["decode"].__get__(None, cls)
    c.pure_read = pure["read"].__get__(None, cls)
    _PURE[cls] = pure
    _FAST[cls] = {
        "encode": ENGINE.fast_encode,
        "write": ENGINE.fast_write,
        "decode": classmethod(ENGINE.fast_decode),
        "read": classmethod(ENGINE.fast_read),
    }
    _apply(cls, _FAST[cls] if _state["compiled"] else pure)


def _apply(cls: type, methods: dict[str, Any]) -> None:
    for name, value in methods.items():
        setattr(cls, name, value)


def compiled() -> bool:
    """Whether the installed classes currently run the compiled engine."""
    return ENGINE is not None and _state["compiled"]


def set_compiled(enabled: bool) -> bool:
    """Select the compiled engine (True) or the pure-Python code (False) for every installed class; returns
    the previous setting. Without the extension only False is possible (LocalProtocolError otherwise)."""
    if enabled and ENGINE is None:
        from kwire.errors import LocalProtocolError

        raise LocalProtocolError("the compiled codec is not built in this installation")
    before = compiled()
    _state["compiled"] = enabled
    record_codec.set_compiled(enabled)
    for cls, pure in _PURE.items():
        _apply(cls, _FAST[cls] if enabled else pure)
    return before


def pure_method(cls: type, name: str) -> Any:
    """The pure-Python ``encode``/``write``/``decode``/``read`` of ``cls`` (bound for the class methods),
    whichever path is selected (benchmarks time both in one run)."""
    value = _PURE[cls][name] if cls in _PURE else cls.__dict__[name]
    return value.__get__(None, cls) if isinstance(value, classmethod) else value


def fallback_count() -> int:
    """Calls the compiled engine declined so far (each reran the pure-Python method); 0 without it."""
    return 0 if ENGINE is None else int(ENGINE.fallback_count())
