"""The frame around metadata (non-control) record values in the KRaft log.

Contracts (PROTOCOL-FACTS §3.1; Kafka AbstractApiMessageSerde):
1. value = unsigned varint frame version (1) + unsigned varint api key + unsigned varint version + the message
   encoded at that version. Record keys are null.
2. Reading refuses any frame version other than 1 and a truncated prefix (CorruptRecordError); the message
   bytes are returned as a view so the caller decodes them with the class it knows for the api key.
3. The default class table is ``generated.messages.METADATA_RECORDS`` (every record type Kafka 4.3.1 ships);
   a version outside the class's range is a CorruptRecordError, never a silent misread.
"""

from __future__ import annotations

from typing import Any, Protocol

from generated.messages import METADATA_RECORDS, metadata_record_classes
from kwire.errors import CorruptRecordError, MessageDecodeError, UnsupportedVersionError
from kwire.varint import decode_unsigned_varint, encode_unsigned_varint

FRAME_VERSION = 1


class _Encodable(Protocol):
    def encode(self, version: int) -> bytes: ...


class _Record(Protocol):
    @property
    def API_KEY(self) -> int | None: ...  # noqa: N802 - the generated ClassVar's name

    def encode(self, version: int) -> bytes: ...


_DEFAULT_CLASSES: dict[int, Any] = metadata_record_classes()


def encode_record(record: _Record, version: int | None = None) -> bytes:
    """Frame a generated metadata record at ``version`` (default: its newest version)."""
    spec = METADATA_RECORDS.get(record.API_KEY if record.API_KEY is not None else -1)
    if spec is None or not isinstance(record, spec.cls):
        raise UnsupportedVersionError(f"{type(record).__name__} is not a metadata record type")
    return encode_metadata_record(spec.api_key, spec.highest_version if version is None else version, record)


def encode_metadata_record(api_key: int, version: int, message: _Encodable | bytes) -> bytes:
    """Frame ``message`` (a generated object, or bytes already encoded at ``version``)."""
    body = message if isinstance(message, bytes) else message.encode(version)
    return (
        encode_unsigned_varint(FRAME_VERSION)
        + encode_unsigned_varint(api_key)
        + encode_unsigned_varint(version)
        + body
    )


def decode_metadata_frame(value: bytes | bytearray | memoryview) -> tuple[int, int, memoryview]:
    """Split a framed value into (api key, version, message bytes)."""
    if len(value) >= 3 and value[0] == FRAME_VERSION and value[1] < 0x80 and value[2] < 0x80:
        return value[1], value[2], memoryview(value)[3:]  # every shipped key and version: one-byte varints
    try:
        frame, pos = decode_unsigned_varint(value, 0)
        if frame != FRAME_VERSION:
            raise CorruptRecordError(f"metadata record frame version {frame} is not {FRAME_VERSION}")
        api_key, pos = decode_unsigned_varint(value, pos)
        version, pos = decode_unsigned_varint(value, pos)
    except MessageDecodeError as exc:
        raise CorruptRecordError(f"metadata record frame: {exc}") from None
    if api_key > 0x7FFF or version > 0x7FFF:
        raise CorruptRecordError(f"metadata record frame names api key {api_key} version {version}")
    return api_key, version, memoryview(value)[pos:]


def decode_metadata_record(
    value: bytes | bytearray | memoryview, classes: dict[int, Any] | None = None
) -> tuple[int, int, Any]:
    """Decode a framed value with ``classes[api_key]`` (default: every metadata record type);
    (api key, version, object)."""
    api_key, version, body = decode_metadata_frame(value)
    cls = (_DEFAULT_CLASSES if classes is None else classes).get(api_key)
    if cls is None:
        raise CorruptRecordError(f"no metadata record class for api key {api_key}")
    try:
        return api_key, version, cls.decode(body, version)
    except (MessageDecodeError, UnsupportedVersionError) as exc:
        raise CorruptRecordError(f"metadata record (api key {api_key} v{version}): {exc}") from None
