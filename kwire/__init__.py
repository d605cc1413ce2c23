"""kwire: the Kafka wire layer (framing, headers, ApiVersions, record batches, control records).

Modules (each documents its contracts):
- ``errors`` — ErrorCode (Kafka's full table) and the KraftError exception tree.
- ``codec`` — runtime primitives of the generated message classes (owned by the codegen).
- ``varint`` — zigzag and unsigned varints.
- ``framing`` — sans-IO size-prefixed frame decoder.
- ``headers`` — request/response headers, server-side request parsing order.
- ``apiversions`` — ApiVersions response building and client negotiation.
- ``compression`` — none/gzip/snappy/lz4/zstd as Kafka writes them.
- ``records`` / ``record_codec`` — record batch v2 build/decode/peek.
- ``batches`` — zero-copy iteration over many batches, valid-prefix detection.
- ``control`` — control batches and records (LeaderChange, snapshot header/footer, KRaftVersion, Voters).
- ``metadata_frame`` — the frame around metadata record values.
- ``server`` / ``client`` — asyncio server and client.

Invariant: this package never imports ``kraftd``. ``kwire.errors`` and ``kwire.codec`` import nothing from the
project, so ``generated`` may depend on them without a cycle. Keep this file free of imports.
"""
