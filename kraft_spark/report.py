"""PNG plots (matplotlib, Agg) and the one self-contained HTML report an operator reads after an incident.

Contracts:
1. Plots are drawn from small driver-side tables (the jobs' outputs, collected) and written as PNG files;
   a plot with no data is not drawn (the caller says so in words instead of showing an empty frame). Time
   axes are wall-clock UTC.
2. The report is one HTML file: every image is embedded as a ``data:image/png;base64`` URI, text is escaped
   HTML, nothing is loaded from elsewhere; the only links are relative ones to the Parquet tables written
   beside it (``<name>/part-00000.parquet``).
3. Times are shown as UTC ISO 8601 (``2026-01-02T03:04:05.678Z``); tables show a summary (counts, the first
   or top N rows) and link the full table, never a raw dump.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.dates as mdates  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402

TIME_COLUMNS = {"timestamp", "start_ts", "prev_last_ts", "first_write_ts"}


def iso(ms: int | None) -> str:
    """UTC ISO 8601 with milliseconds (contract 3)."""
    if ms is None:
        return ""
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


DAY_MS = 86_400_000


def when(ms: int) -> float:
    """Matplotlib's date number (days since its epoch, 1970-01-01 UTC) of epoch milliseconds."""
    return ms / DAY_MS


def _save(fig: Any, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def _time_axis(ax: Any, span: tuple[int, int]) -> None:
    """The same wall-clock range on every time plot (the log's first to last record)."""
    lo, hi = when(span[0]), when(max(span))
    pad = max((hi - lo) * 0.03, 200 / DAY_MS)
    ax.set_xlim(lo - pad, hi + pad)
    locator = mdates.AutoDateLocator(tz=UTC)  # type: ignore[no-untyped-call]
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator, tz=UTC))  # type: ignore[no-untyped-call]
    ax.set_xlabel("UTC")


def _lanes(ax: Any, ids: Sequence[int], label: str) -> None:
    ax.set_yticks(range(len(ids)), [f"{label} {i}" for i in ids])
    ax.set_ylim(-0.6, len(ids) - 0.4)


def plot_leader_lanes(
    timeline: Sequence[dict[str, Any]],
    failovers: Sequence[dict[str, Any]],
    nodes: Sequence[int],
    span: tuple[int, int],
    path: Path,
) -> Path | None:
    """One lane per node; a bar per leadership (epoch), grey bands with no leader writing, red lines at
    elections."""
    if not timeline:
        return None
    ids = sorted({*nodes, *(r["leader_id"] for r in timeline)})
    lane = {n: i for i, n in enumerate(ids)}
    fig, ax = plt.subplots(figsize=(10, 0.6 * len(ids) + 1.8))
    gap = {f["epoch"]: f["failover_ms"] for f in failovers}
    for i, r in enumerate(timeline):
        start = r["timestamp"]
        if i + 1 < len(
            timeline
        ):  # until the leader's last write (the next election's grey band starts there)
            nxt = timeline[i + 1]
            stop = nxt["timestamp"] - max(0, gap.get(nxt["epoch"], 0))
        else:
            stop = span[1]
        width = when(max(stop, start)) - when(start)
        colour = ("tab:blue", "tab:cyan")[i % 2]
        ax.broken_barh([(when(start), width)], (lane[r["leader_id"]] - 0.3, 0.6), color=colour)
        ax.annotate(
            f"epoch {r['epoch']}",
            (when(start), lane[r["leader_id"]] + 0.32),
            fontsize=8,
            xytext=(2, 0),
            textcoords="offset points",
        )
        if i > 0:
            ax.axvline(when(start), color="red", linestyle="--", linewidth=1)
    for f in failovers:
        if f["failover_ms"] > 0:
            ax.axvspan(when(f["start_ts"] - f["failover_ms"]), when(f["start_ts"]), color="grey", alpha=0.3)
    _lanes(ax, ids, "node")
    _time_axis(ax, span)
    ax.set_title("Leader per node (bars), elections (red), no leader writing (grey)")
    return _save(fig, path)


_BROKER_STATE = {
    "registered": ("fenced", "tab:red"),
    "fenced": ("fenced", "tab:red"),
    "unfenced": ("active", "tab:green"),
    "controlled_shutdown": ("controlled shutdown", "tab:orange"),
}


def plot_broker_lanes(events: Sequence[dict[str, Any]], span: tuple[int, int], path: Path) -> Path | None:
    """One lane per broker, coloured by state (fenced / active / controlled shutdown), events marked."""
    if not events:
        return None
    ids = sorted({e["broker_id"] for e in events})
    lane = {b: i for i, b in enumerate(ids)}
    fig, ax = plt.subplots(figsize=(10, 0.5 * len(ids) + 1.8))
    state: dict[int, tuple[int, str, str]] = {}
    seen: set[str] = set()

    def close(broker: int, until: int) -> None:
        if broker in state:
            start, name, color = state.pop(broker)
            ax.broken_barh(
                [(when(start), when(until) - when(start))],
                (lane[broker] - 0.3, 0.6),
                color=color,
                label=None if name in seen else name,
            )
            seen.add(name)

    for e in events:
        b, ts, ev = e["broker_id"], e["timestamp"], e["event"]
        if ev == "registered" and e.get("registered_fenced") is False:
            ev = "unfenced"
        if ev in _BROKER_STATE or ev == "unregistered":
            close(b, ts)
        if ev in _BROKER_STATE:
            name, color = _BROKER_STATE[ev]
            state[b] = (ts, name, color)
        marker = {"registered": "^", "unregistered": "x"}.get(e["event"])
        if marker:
            ax.plot([when(ts)], [lane[b]], marker=marker, color="black", linestyle="none")
    for b in list(state):
        close(b, max(span[1], state[b][0]))
    _lanes(ax, ids, "broker")
    _time_axis(ax, span)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
    ax.set_title("Broker state (^ registered, x unregistered)")
    return _save(fig, path)


def plot_counts(rows: Sequence[dict[str, Any]], span: tuple[int, int], path: Path) -> Path | None:
    """Topics and partitions over time (step lines on two axes), from zero at the log's start."""
    if not rows:
        return None
    xs = [when(span[0])] + [when(r["second"] * 1000) for r in rows] + [when(max(span))]
    topics = [0] + [r["topics"] for r in rows] + [rows[-1]["topics"]]
    partitions = [0] + [r["partitions"] for r in rows] + [rows[-1]["partitions"]]
    fig, ax = plt.subplots(figsize=(10, 3))
    ax.step(xs, topics, where="post", color="tab:blue", linewidth=2)
    ax.set_ylabel("topics", color="tab:blue")
    ax2 = ax.twinx()
    ax2.step(xs, partitions, where="post", color="tab:purple", linestyle="--")
    ax2.set_ylabel("partitions", color="tab:purple")
    ax.set_ylim(0, max(topics) * 1.15 + 0.5)
    ax2.set_ylim(0, max(partitions) * 1.15 + 0.5)
    _time_axis(ax, span)
    ax.set_title("Topics (solid) and partitions (dashed)")
    return _save(fig, path)


def plot_rate(rows: Sequence[dict[str, Any]], span: tuple[int, int], path: Path) -> Path | None:
    """Committed records per second; fewer than two seconds is no curve (not drawn)."""
    if len(rows) < 2:
        return None
    xs = [when(r["second"] * 1000) for r in rows]
    fig, ax = plt.subplots(figsize=(10, 2.6))
    ax.plot(xs, [r["records"] for r in rows], color="tab:green", marker="." if len(rows) < 50 else None)
    ax.set_ylim(bottom=0)
    ax.set_ylabel("records/s")
    _time_axis(ax, span)
    ax.set_title("Commit rate")
    return _save(fig, path)


def plot_bars(
    labels: Sequence[Any], stacks: Mapping[str, Sequence[float]], title: str, ylabel: str, path: Path
) -> Path | None:
    """Bars (stacked when several series); nothing to draw when every value is zero or there are none."""
    if not labels or not any(v for vs in stacks.values() for v in vs):
        return None
    fig, ax = plt.subplots(figsize=(10, 3))
    bottom = [0.0] * len(labels)
    for name, values in stacks.items():
        ax.bar([str(x) for x in labels], values, bottom=bottom, label=name)
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    if len(stacks) > 1:
        ax.legend(fontsize=8)
    ax.set_title(title)
    ax.set_ylabel(ylabel)
    ax.tick_params(axis="x", labelsize=8)
    return _save(fig, path)


def plot_histogram(values: Sequence[float], title: str, xlabel: str, path: Path) -> Path | None:
    if not values:
        return None
    fig, ax = plt.subplots(figsize=(10, 3))
    ax.hist(values, bins=min(40, max(5, len(values) // 5)), color="tab:purple")
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("count")
    return _save(fig, path)


def cell(column: str, value: Any) -> str:
    if column in TIME_COLUMNS and isinstance(value, int):
        return iso(value)
    if column == "second" and isinstance(value, int):
        return iso(value * 1000)
    if isinstance(value, list):
        return ", ".join(map(str, value))
    return "" if value is None else str(value)


def table(
    rows: Sequence[dict[str, Any]], columns: Sequence[str], *, limit: int = 10, pre: Sequence[str] = ()
) -> str:
    """The first ``limit`` rows of ``columns`` (times as UTC ISO; ``pre`` columns in <pre>)."""
    if not rows:
        return "<p><em>no rows</em></p>"
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)

    def td(c: str, v: Any) -> str:
        text = html.escape(cell(c, v))
        return f"<td><pre>{text}</pre></td>" if c in pre else f"<td>{text}</td>"

    body = "".join("<tr>" + "".join(td(c, r.get(c)) for c in columns) + "</tr>" for r in rows[:limit])
    more = f"<p>showing {limit} of {len(rows)} rows</p>" if len(rows) > limit else ""
    return f"<table><tr>{head}</tr>{body}</table>{more}"


def facts(pairs: Sequence[tuple[str, Any]]) -> str:
    """A two-column key/value table."""
    body = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(str(v))}</td></tr>" for k, v in pairs)
    return f'<table class="facts">{body}</table>'


def counts(rows: Sequence[dict[str, Any]], key: str | Callable[[dict[str, Any]], Any], what: str) -> str:
    """A count per distinct value, most frequent first."""
    tally: dict[str, int] = {}
    for r in rows:
        k = str(key(r) if callable(key) else r.get(key))
        tally[k] = tally.get(k, 0) + 1
    ordered = sorted(tally.items(), key=lambda kv: (-kv[1], kv[0]))
    return table([{what: k, "count": n} for k, n in ordered], [what, "count"], limit=20)


def link(name: str) -> str:
    """A relative link to a Parquet table written beside the report (contract 2)."""
    href = html.escape(f"{name}/part-00000.parquet")
    return f'<p class="parquet">full table: <a href="{href}">{html.escape(name)}/</a> (Parquet)</p>'


def text(message: str) -> str:
    return f"<p>{html.escape(message)}</p>"


@dataclass
class Section:
    heading: str
    plots: list[tuple[Path | None, str]] = field(default_factory=list)  # (png, alt); None is not drawn
    body: list[str] = field(default_factory=list)  # HTML fragments built with the helpers above


def _image(path: Path, alt: str) -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'


def write_html(path: Path, title: str, sections: Sequence[Section]) -> Path:
    """Contract 2."""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title>",
        "<style>body{font-family:sans-serif;margin:2em;max-width:1100px}"
        "table{border-collapse:collapse;font-size:12px;margin:.4em 0}"
        "td,th{border:1px solid #ccc;padding:2px 6px;text-align:left;vertical-align:top}"
        ".facts th{background:#f4f4f4}img{max-width:100%;display:block;margin:.5em 0}"
        "pre{white-space:pre-wrap;margin:0;max-height:8em;overflow:auto}h2{border-bottom:1px solid #ddd}"
        ".parquet{font-size:12px;color:#555}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
    ]
    for s in sections:
        parts.append(f"<h2>{html.escape(s.heading)}</h2>")
        parts.extend(_image(p, alt) for p, alt in s.plots if p is not None)
        parts.extend(s.body)
    parts.append("</body></html>")
    path.write_text("\n".join(parts), encoding="utf-8")
    return path
