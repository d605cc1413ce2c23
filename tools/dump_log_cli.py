"""``kraft-dump-log FILE...``: print the record batches of log segments and snapshots (Kafka's kafka-dump-log).

Contracts:
1. Every batch found is printed with its offsets, epoch, size, position and CRC status (``isvalid``); a batch
   whose CRC fails is reported and skipped, never decoded.
2. A torn tail (fewer bytes than the next batch needs) or unusable framing ends the file with a line saying why.
3. Control records are decoded (LeaderChange, SnapshotHeader/Footer, KRaftVersion, KRaftVoters); data records
   show their sizes, and their bytes with ``--print-data-log``.
4. Exit status is 1 when any file had an invalid batch or could not be read, else 0.
"""

from __future__ import annotations

import struct
from pathlib import Path

import click

from kraftd.storage.controlrec import describe_control_record
from kwire.errors import KraftError
from kwire.records import HEADER_SIZE, LOG_OVERHEAD, RecordBatch, decode_at, peek_batch


def _batch_line(position: int, batch: RecordBatch, crc: int, crc_ok: bool, size: int) -> str:
    count = len(batch.records)
    return (
        f"baseOffset: {batch.base_offset} lastOffset: {batch.last_offset} count: {count} "
        f"baseSequence: {batch.base_sequence} producerId: {batch.producer_id} "
        f"producerEpoch: {batch.producer_epoch} partitionLeaderEpoch: {batch.partition_leader_epoch} "
        f"isTransactional: {str(batch.is_transactional).lower()} isControl: {str(batch.is_control).lower()} "
        f"position: {position} CreateTime: {batch.max_timestamp} size: {size} magic: 2 "
        f"compresscodec: {batch.compression.name.lower()} crc: {crc} isvalid: {str(crc_ok).lower()}"
    )


def dump_buffer(data: bytes, *, print_data: bool = False) -> tuple[list[str], bool]:
    """Lines describing every batch in ``data`` and whether everything was valid (contracts 1-2)."""
    lines: list[str] = []
    ok = True
    pos = 0
    while pos < len(data):
        remaining = len(data) - pos
        if remaining < LOG_OVERHEAD:
            lines.append(f"Found {remaining} trailing bytes at position {pos}: a torn batch header")
            return lines, False
        length = struct.unpack_from(">i", data, pos + 8)[0]
        if remaining < max(LOG_OVERHEAD + length, HEADER_SIZE):
            lines.append(
                f"Found a torn batch at position {pos}: it needs {length + LOG_OVERHEAD} bytes, {remaining} remain"
            )
            return lines, False
        try:
            header = peek_batch(data, pos, verify_crc=True)
        except KraftError as exc:
            lines.append(f"Found unreadable batch framing at position {pos}: {exc}")
            return lines, False
        if not header.crc_ok:
            ok = False
            lines.append(
                f"baseOffset: {header.base_offset} lastOffset: {header.last_offset} "
                f"partitionLeaderEpoch: {header.partition_leader_epoch} position: {pos} size: {header.size} "
                f"crc: {header.crc} isvalid: false"
            )
            pos += header.size
            continue
        try:
            batch = decode_at(data, header, verify_crc=False)
        except KraftError as exc:
            ok = False
            lines.append(f"baseOffset: {header.base_offset} position: {pos} isvalid: true undecodable: {exc}")
            pos += header.size
            continue
        lines.append(_batch_line(pos, batch, header.crc, True, header.size))
        for rec in batch.records:
            offset = batch.offset_of(rec)
            key_size = -1 if rec.key is None else len(rec.key)
            value_size = -1 if rec.value is None else len(rec.value)
            line = (
                f"| offset: {offset} CreateTime: {batch.timestamp_of(rec)} keySize: {key_size} "
                f"valueSize: {value_size} sequence: -1 headerKeys: [{','.join(h for h, _ in rec.headers)}]"
            )
            if batch.is_control:
                line += " " + describe_control_record(rec.key, rec.value)
            elif print_data and rec.value is not None:
                line += f" payload: {rec.value.hex()}"
            lines.append(line)
        pos += header.size
    return lines, ok


@click.command(help="Print the record batches of kraftd/Kafka log segments and snapshot files.")
@click.version_option(package_name="kraftd", prog_name="kraft-dump-log")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--print-data-log", is_flag=True, help="Print the bytes of data records (hex).")
def main(files: tuple[Path, ...], print_data_log: bool) -> None:
    all_ok = True
    for path in files:
        click.echo(f"Dumping {path}")
        try:
            data = path.read_bytes()
        except OSError as exc:
            click.echo(f"Cannot read {path}: {exc.strerror or exc}", err=True)
            all_ok = False
            continue
        if path.name.endswith(".log") and path.name[:-4].isdigit():
            click.echo(f"Log starting offset: {int(path.name[:-4])}")
        lines, ok = dump_buffer(data, print_data=print_data_log)
        for line in lines:
            click.echo(line)
        all_ok = all_ok and ok
    if not all_ok:
        raise SystemExit(1)
