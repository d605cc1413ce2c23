"""``kraft-decode FILE.pcap[ng] [--ports 9093,9094] [--json]``: print the Kafka requests and responses in a capture.

Contracts:
1. Text: one line per message (time, connection, direction, api and version, correlation id, error) followed by
   its decoded body as one JSON line; ``--summary`` prints only the lines. JSON: one object per message per line.
2. ``--ports`` names the server ports (the Kafka listeners): only connections with one of them are decoded, and
   they orient connections whose handshake was not captured. Without it every TCP connection is tried.
3. Exit status 0 when the capture was read (malformed frames are reported, not fatal), 2 when it cannot be read.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from tools.decode.kafka import Message, decode_connection
from tools.decode.pcap import TCP_ACK, TCP_SYN, PcapError, read_packets
from tools.decode.streams import reassemble


def decode_capture(path: Path, ports: frozenset[int] = frozenset()) -> list[Message]:
    """Contract 2; without ``ports``, the ports that accepted a captured SYN are taken as the listeners."""
    segments = list(read_packets(path))
    if ports:
        segments = [s for s in segments if s.src[1] in ports or s.dst[1] in ports]
    else:
        ports = frozenset(s.dst[1] for s in segments if s.flags & TCP_SYN and not s.flags & TCP_ACK)
    messages: list[Message] = []
    for conn in reassemble(segments, ports):
        messages += decode_connection(conn)
    messages.sort(key=lambda m: (m.ts, m.conn))
    return messages


def _line(m: Message) -> str:
    where = f"#{m.conn} {m.src[0]}:{m.src[1]} -> {m.dst[0]}:{m.dst[1]}"
    what = m.kind if m.api is None else f"{m.kind} {m.api} v{m.version}"
    cid = "" if m.correlation_id is None else f" cid={m.correlation_id}"
    extra = "" if m.kind != "response" or m.latency_ms is None else f" ({m.latency_ms} ms)"
    unpaired = " UNPAIRED" if m.kind in ("request", "response") and not m.paired else ""
    err = f" ERROR: {m.error}" if m.error else ""
    notes = "".join(f" [{n}]" for n in m.notes)
    return f"{m.ts:.6f} {where} {what}{cid}{extra}{unpaired}{err}{notes}"


@click.command(help="Decode the Kafka-protocol traffic in a pcap or pcapng capture.")
@click.version_option(package_name="kraftd", prog_name="kraft-decode")
@click.argument("capture", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--ports", default="", help="Comma-separated server (listener) ports, e.g. 9093,9094.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per message per line.")
@click.option("--summary", is_flag=True, help="Text: one line per message, without bodies.")
def main(capture: Path, ports: str, as_json: bool, summary: bool) -> None:
    try:
        port_set = frozenset(int(p) for p in ports.split(",") if p.strip())
    except ValueError:
        raise click.BadParameter("expected comma-separated port numbers", param_hint="--ports") from None
    try:
        messages = decode_capture(capture, port_set)
    except (PcapError, OSError) as exc:
        click.echo(f"kraft-decode: {exc}", err=True)
        raise SystemExit(2) from None
    for m in messages:
        if as_json:
            click.echo(json.dumps(m.to_json(), sort_keys=True))
        else:
            click.echo(_line(m))
            if not summary and m.body is not None:
                click.echo("    " + json.dumps(m.body, sort_keys=True))
