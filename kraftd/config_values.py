"""The value syntax of ``server.properties`` (kraftd.config contract 1): the Java ``.properties`` format, and the
forms of listener lists, voter lists, integers and booleans. Each error is a :class:`ConfigError` naming the key
and the form it expects (kraftd.config contract 2).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kwire.errors import KraftError


class ConfigError(KraftError):
    """``server.properties`` is malformed or holds a value this controller cannot run with."""


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One listener: ``NAME://host:port``. An empty host means every interface (bind) / unknown (advertise)."""

    name: str
    host: str
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.name}://{host}:{self.port}"


@dataclass(frozen=True, slots=True)
class StaticVoter:
    """One entry of ``controller.quorum.voters`` (``id@host:port``)."""

    node_id: int
    host: str
    port: int


# --------------------------------------------------------------------------------------------------- parsing


def _logical_lines(text: str) -> list[str]:
    """Join continuation lines; drop blanks and comments (contract 1)."""
    out: list[str] = []
    pending: str | None = None
    for raw in text.splitlines():
        line = raw.lstrip(" \t\f")
        if pending is None:
            if not line or line[0] in "#!":
                continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            pending = (pending or "") + line[:-1]
            continue
        out.append((pending or "") + line)
        pending = None
    if pending is not None:
        out.append(pending)
    return out


def _unescape(s: str, key: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(s):
        c = s[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        if i + 1 >= len(s):
            break
        n = s[i + 1]
        if n == "u":
            hexdigits = s[i + 2 : i + 6]
            if len(hexdigits) != 4 or any(h not in "0123456789abcdefABCDEF" for h in hexdigits):
                raise ConfigError(f"{key or 'properties'}: malformed \\uXXXX escape {s[i : i + 6]!r}")
            out.append(chr(int(hexdigits, 16)))
            i += 6
            continue
        out.append({"t": "\t", "n": "\n", "r": "\r", "f": "\f"}.get(n, n))
        i += 2
    return "".join(out)


def _split_key(line: str) -> tuple[str, str]:
    i = 0
    while i < len(line):
        c = line[i]
        if c == "\\":
            i += 2
            continue
        if c in "=: \t\f":
            break
        i += 1
    key, rest = line[:i], line[i:]
    rest = rest.lstrip(" \t\f")
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(" \t\f")
    return key, rest


def parse_properties(text: str) -> dict[str, str]:
    """Parse Java ``.properties`` text into an ordered dict (contract 1)."""
    props: dict[str, str] = {}
    for line in _logical_lines(text):
        raw_key, raw_value = _split_key(line)
        key = _unescape(raw_key, "")
        props[key] = _unescape(raw_value, key)
    return props


# ------------------------------------------------------------------------------------------------ validation


def flag_value(props: Mapping[str, str], key: str, default: bool) -> bool:
    raw = (props.get(key) or "").strip().lower()
    if raw in ("true", "false"):
        return raw == "true"
    if raw:
        raise ConfigError(f"{key}: {raw!r} is not a boolean; expected true or false")
    return default


def int_value(props: Mapping[str, str], key: str, default: int | None, minimum: int) -> int:
    raw = props.get(key)
    if raw is None or raw.strip() == "":
        if default is None:
            raise ConfigError(f"{key}: required; expected an integer >= {minimum}")
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise ConfigError(f"{key}: {raw!r} is not an integer; expected an integer >= {minimum}") from None
    if value < minimum:
        raise ConfigError(f"{key}: {value} is out of range; expected an integer >= {minimum}")
    return value


def csv_items(raw: str | None) -> list[str]:
    if raw is None:
        return []
    return [p.strip() for p in raw.split(",") if p.strip()]


def host_port(text: str, key: str, form: str) -> tuple[str, int]:
    if text.startswith("["):
        close = text.find("]")
        if close < 0 or text[close + 1 : close + 2] != ":":
            raise ConfigError(f"{key}: {text!r} is malformed; expected {form}")
        host, port_text = text[1:close], text[close + 2 :]
    else:
        host, sep, port_text = text.rpartition(":")
        if not sep:
            raise ConfigError(f"{key}: {text!r} has no port; expected {form}")
    try:
        port = int(port_text)
    except ValueError:
        raise ConfigError(f"{key}: {text!r} has a non-numeric port; expected {form}") from None
    if not 0 <= port <= 65535:
        raise ConfigError(f"{key}: port {port} is out of range 0-65535; expected {form}")
    return host, port


def parse_endpoints(raw: str | None, key: str) -> tuple[Endpoint, ...]:
    form = "a comma-separated list of NAME://host:port"
    out: list[Endpoint] = []
    for item in csv_items(raw):
        name, sep, rest = item.partition("://")
        if not sep or not name:
            raise ConfigError(f"{key}: {item!r} is malformed; expected {form}")
        host, port = host_port(rest, key, form)
        if any(e.name == name.upper() for e in out):
            raise ConfigError(f"{key}: listener name {name!r} appears twice; expected {form}")
        out.append(Endpoint(name.upper(), host, port))
    return tuple(out)


def parse_voters(raw: str | None, key: str = "controller.quorum.voters") -> tuple[StaticVoter, ...]:
    form = "a comma-separated list of id@host:port"
    out: list[StaticVoter] = []
    for item in csv_items(raw):
        id_text, sep, rest = item.partition("@")
        if not sep:
            raise ConfigError(f"{key}: {item!r} has no '@'; expected {form}")
        try:
            node_id = int(id_text)
        except ValueError:
            raise ConfigError(f"{key}: {item!r} has a non-numeric id; expected {form}") from None
        if node_id < 0:
            raise ConfigError(f"{key}: {item!r} has a negative id; expected {form}")
        host, port = host_port(rest, key, form)
        if any(v.node_id == node_id for v in out):
            raise ConfigError(f"{key}: voter id {node_id} appears twice; expected {form}")
        out.append(StaticVoter(node_id, host, port))
    return tuple(out)
