"""PNG plots (matplotlib, Agg) and the one self-contained HTML report.

Contracts:
1. Plots are drawn from small driver-side tables (the jobs' outputs, collected) and written as PNG files;
   a plot with no data is not drawn (the report says so instead of showing an empty frame).
2. The report is one HTML file: every image is embedded as a ``data:image/png;base64`` URI, tables are
   escaped HTML, nothing is loaded from elsewhere.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def _save(fig: Any, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def plot_leader_timeline(rows: Sequence[Any], path: Path) -> Path | None:
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(8, 3))
    t0 = rows[0]["timestamp"]
    xs = [(r["timestamp"] - t0) / 1000 for r in rows]
    ax.step(xs, [r["epoch"] for r in rows], where="post", color="tab:blue", label="epoch")
    for x, r in zip(xs, rows, strict=True):
        ax.annotate(
            f"L{r['leader_id']}", (x, r["epoch"]), fontsize=7, xytext=(2, 2), textcoords="offset points"
        )
    ax.set_xlabel("seconds since first LeaderChange")
    ax.set_ylabel("epoch")
    ax.set_title("Leader / epoch timeline")
    return _save(fig, path)


def plot_bars(
    labels: Sequence[Any], values: Sequence[float], title: str, ylabel: str, path: Path
) -> Path | None:
    if not values:
        return None
    fig, ax = plt.subplots(figsize=(8, 3))
    ax.bar([str(x) for x in labels], values, color="tab:orange")
    ax.set_title(title)
    ax.set_ylabel(ylabel)
    return _save(fig, path)


def plot_line(xs: Sequence[float], ys: Sequence[float], title: str, ylabel: str, path: Path) -> Path | None:
    if not xs:
        return None
    fig, ax = plt.subplots(figsize=(8, 3))
    ax.plot(xs, ys, color="tab:green")
    ax.set_title(title)
    ax.set_xlabel("seconds")
    ax.set_ylabel(ylabel)
    return _save(fig, path)


def plot_histogram(values: Sequence[float], title: str, xlabel: str, path: Path) -> Path | None:
    if not values:
        return None
    fig, ax = plt.subplots(figsize=(8, 3))
    ax.hist(values, bins=min(40, max(5, len(values) // 5)), color="tab:purple")
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("count")
    return _save(fig, path)


def _table(rows: Sequence[dict[str, Any]], limit: int = 50) -> str:
    if not rows:
        return "<p><em>no rows</em></p>"
    cols = list(rows[0])
    head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(r[c]))}</td>" for c in cols) + "</tr>" for r in rows[:limit]
    )
    more = f"<p>{len(rows) - limit} more rows in the Parquet table.</p>" if len(rows) > limit else ""
    return f"<table><tr>{head}</tr>{body}</table>{more}"


def _image(path: Path | None, alt: str) -> str:
    if path is None:
        return f"<p><em>{html.escape(alt)}: no data</em></p>"
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'


def write_html(
    path: Path, title: str, sections: Sequence[tuple[str, Path | None, Sequence[dict[str, Any]]]]
) -> Path:
    """``sections``: (heading, plot or None, table rows) in order (contract 2)."""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title>",
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;font-size:12px}"
        "td,th{border:1px solid #ccc;padding:2px 6px;text-align:left;vertical-align:top}"
        "img{max-width:100%}pre{white-space:pre-wrap}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
    ]
    for heading, plot, rows in sections:
        parts.append(f"<h2>{html.escape(heading)}</h2>")
        if plot is not None or not rows:
            parts.append(_image(plot, heading))
        parts.append(_table(rows))
    parts.append("</body></html>")
    path.write_text("\n".join(parts), encoding="utf-8")
    return path
