"""kwire: the Kafka wire layer (framing, headers, ApiVersions, record batches, control records).

Invariant: this package never imports ``kraftd``. ``kwire.errors`` and ``kwire.codec`` import nothing from the
project, so ``generated`` may depend on them without a cycle. Keep this file free of imports.
"""
