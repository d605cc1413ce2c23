"""Helpers shared by test modules, in one place (tests/test_layers.py rule 10): a test module imports shared
helpers from here (or uses a conftest.py fixture), never from another test module.

- controller: metadata images, broker registration and heartbeats, topics and partitions for the sans-IO
  controller tests.
- spark: metadata record frames and streaming waits for the Spark pipeline tests.
- interop: real-process quorums for the interop fixtures.

The real-process harness itself (Kafka, brokers, clusters) is kraftd.testing (bench/ uses it too).
"""
