"""Fuzz targets: each takes arbitrary bytes and may only fail with a KraftError.

Contracts:
1. ``TARGETS[name](data)`` returns normally or raises a :class:`kwire.errors.KraftError` subclass; any other
   exception (IndexError, struct.error, MemoryError, RecursionError, UnicodeDecodeError ...) is a bug the fuzzer
   reports as a crash.
2. Targets are deterministic functions of their input: the same bytes always give the same outcome, so every
   crash replays from its corpus file (tests/fuzz/corpus/<target>/...).
3. Memory is bounded by the input: a declared length (frame size, array count, string length, batch length)
   never makes a reader allocate before the bytes it announces have arrived. ``bounded_peak`` measures it.
4. The on-disk targets write the input to a private temporary directory (one per process, reused) and run the
   same reader the node runs at start-up.
"""

from __future__ import annotations

import shutil
import struct
import tempfile
import tracemalloc
from collections.abc import Callable
from pathlib import Path

from generated.messages import ALL_CLASSES, API_SPECS
from generated.sasl_authenticate_request import SaslAuthenticateRequest
from generated.sasl_handshake_request import SaslHandshakeRequest
from kraftd.config import config_from_properties, parse_properties
from kraftd.storage.bootstrap import read_bootstrap_checkpoint
from kraftd.storage.epoch_checkpoint import decode_entries
from kraftd.storage.log import MetadataLog
from kraftd.storage.meta import read_meta
from kraftd.storage.quorum_state import QuorumStateFile
from kraftd.storage.segment import segment_name
from kwire.batches import iter_batches, scan_batches
from kwire.control import decode_control_records
from kwire.framing import FrameDecoder
from kwire.headers import parse_request
from kwire.metadata_frame import decode_metadata_record
from kwire.records import decode_batch
from kwire.sasl import JaasCredentials, SaslServerConfig, ServerSession

Target = Callable[[bytes], None]

# Every API at every version the generator knows, as a server that serves them all would see it.
_ALL_SERVED = {k: (s.lowest_version, s.highest_version) for k, s in API_SPECS.items()}
_CLASSES = sorted(ALL_CLASSES, key=lambda c: c.__name__)
# Every generated class under a made-up api key: the frame decoder and every class's reader both get fuzzed.
_METADATA_CLASSES = dict(enumerate(_CLASSES))
_BY_NAME = {c.__name__.encode(): c for c in _CLASSES}
_SMALL_FRAME = 1 << 16


def frame_decoder(data: bytes) -> None:
    """Chunked feeding; the split points come from the first byte (contract 2)."""
    if not data:
        return
    step = data[0] % 7 + 1
    dec = FrameDecoder(_SMALL_FRAME)
    fed = 0
    for i in range(1, len(data), step):
        chunk = data[i : i + step]
        fed += len(chunk)
        for frame in dec.feed(chunk):
            fed -= len(frame) + 4
        # A parsed size prefix is no longer counted as buffered; nothing beyond what arrived is held.
        assert fed - 4 <= dec.buffered <= fed, "the decoder holds bytes it was never given"


def request(data: bytes) -> None:
    """Header then body, as KafkaServer parses every frame."""
    parse_request(data, _ALL_SERVED)


def message(data: bytes) -> None:
    """Every generated class at every version: ``<class name> NUL <version step> <body>``.

    A name that is not a class picks one by its byte sum, so mutated names still reach some reader."""
    name, _, rest = data.partition(b"\0")
    if not rest:
        return
    cls = _BY_NAME.get(name) or _CLASSES[sum(name) % len(_CLASSES)]
    lo, hi = _versions(cls)
    cls.decode(rest[1:], lo + rest[0] % (hi - lo + 1))  # type: ignore[attr-defined]


def _versions(cls: type) -> tuple[int, int]:
    lo: int = cls.LOWEST_VERSION  # type: ignore[attr-defined]
    hi: int = cls.HIGHEST_VERSION  # type: ignore[attr-defined]
    return lo, max(lo, hi)


def record_batch(data: bytes) -> None:
    """One batch with CRC checking off (so the fuzzer reaches the record parser) and on."""
    for verify in (False, True):
        batch = decode_batch(data, verify_crc=verify, max_decompressed=1 << 20)
        if batch.is_control:
            decode_control_records(batch)


def batch_stream(data: bytes) -> None:
    """A segment's bytes: scanning and iterating batch by batch, then decoding each."""
    scan_batches(data)
    for view in iter_batches(data):
        batch = view.decode(verify_crc=False)
        if batch.is_control:
            decode_control_records(batch)


def metadata_record(data: bytes) -> None:
    decode_metadata_record(data, _METADATA_CLASSES)


def server_properties(data: bytes) -> None:
    text = data.decode("latin-1")
    config_from_properties(parse_properties(text))


def epoch_checkpoint(data: bytes) -> None:
    decode_entries(data.decode("latin-1"), "leader-epoch-checkpoint")


class _Scratch:
    """One private directory per process for the on-disk readers (contract 4)."""

    path: Path | None = None

    @classmethod
    def dir(cls) -> Path:
        if cls.path is None:
            cls.path = Path(tempfile.mkdtemp(prefix="kraftd-fuzz-"))
        return cls.path

    @classmethod
    def fresh(cls, name: str) -> Path:
        d = cls.dir() / name
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir()
        return d


def quorum_state(data: bytes) -> None:
    d = _Scratch.fresh("qs")
    (d / "quorum-state").write_bytes(data)
    QuorumStateFile(d).read()


def meta_properties(data: bytes) -> None:
    d = _Scratch.fresh("meta")
    (d / "meta.properties").write_bytes(data)
    read_meta(d)


def bootstrap_checkpoint(data: bytes) -> None:
    d = _Scratch.fresh("snap")
    path = d / "bootstrap.checkpoint"
    path.write_bytes(data)
    read_bootstrap_checkpoint(path)


def segment_recovery(data: bytes) -> None:
    """A node restarting on a segment holding these bytes (and the epoch checkpoint from the first line)."""
    d = _Scratch.fresh("seg")
    (d / segment_name(0)).write_bytes(data)
    log = MetadataLog(d, 1 << 20, fsync=False)
    try:
        log.batches()
    finally:
        log.close()


_SASL = SaslServerConfig(
    ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"),
    JaasCredentials({"alice": "alice-secret", "": "x"}),
    reauth_ms=1000,
    random_bytes=lambda n: b"\x07" * n,  # contract 2: deterministic nonces (server nonce "BwcH...")
)


def sasl_exchange(data: bytes) -> None:
    """A client's SASL messages as a server session sees them: byte 0 picks the mechanism, NUL NUL separates
    messages; a SCRAM client-first naming alice is prepended half the time so the final step is reached."""
    if not data:
        return
    mech = _SASL.mechanisms[data[0] % 3]
    session = ServerSession(_SASL)
    if session.handshake(SaslHandshakeRequest(mech)).error_code:
        return
    messages = data[1:].split(b"\0\0")
    if mech != "PLAIN" and data[0] & 0x80:
        messages.insert(0, b"n,,n=alice,r=abc")
    for i, m in enumerate(messages[:4]):
        resp = session.authenticate(SaslAuthenticateRequest(m), 1, i)
        if resp.error_code:
            return
        session.admit(3, i)


TARGETS: dict[str, Target] = {
    "frame_decoder": frame_decoder,
    "request": request,
    "message": message,
    "record_batch": record_batch,
    "batch_stream": batch_stream,
    "metadata_record": metadata_record,
    "server_properties": server_properties,
    "epoch_checkpoint": epoch_checkpoint,
    "quorum_state": quorum_state,
    "meta_properties": meta_properties,
    "bootstrap_checkpoint": bootstrap_checkpoint,
    "segment_recovery": segment_recovery,
    "sasl_exchange": sasl_exchange,
}


def bounded_peak(target: Target, data: bytes) -> int:
    """Peak bytes Python allocated while ``target`` ran (contract 3); errors count as normal returns."""
    from kwire.errors import KraftError

    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        try:
            target(data)
        except KraftError:
            pass
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# A large declared length followed by almost nothing: each must be refused before any allocation of its size.
HUGE = 0x7FFFFFF0
DECLARED_LENGTH_PROBES: dict[str, bytes] = {
    "frame_decoder": b"\x00" + struct.pack(">i", HUGE) + b"xyz",
    # ApiVersions v3 (flexible): header, then a compact string declaring ~2**28 bytes.
    "request": struct.pack(">hhih", 18, 3, 1, 0) + b"\x00" + b"\xf0\xff\xff\xff\x01",
    # FetchRequest v4 (non-flexible): replica id, max wait, min bytes, max bytes, isolation, then a topic
    # array whose int32 count claims 2**31-16 entries.
    "message": b"FetchRequest\0\0" + struct.pack(">iiiib", -1, 0, 0, 0, 0) + struct.pack(">i", HUGE),
    # A batch header whose length and record count claim 2 GB / 2**31 records.
    "record_batch": struct.pack(">qiibIhiqqqhii", 0, HUGE, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, HUGE),
}
