"""The importable test harness: real Apache Kafka processes and kraftd process clusters, shared by tests/ and bench/.

Layer: on top, like tools/ (tests/test_layers.py rule 8): it may import tools and the rest of kraftd; nothing in
generated, kwire, kraftd, tools, codegen or kraft_spark imports it. Modules:

- kafka: Kafka's jars (classpath), its tools (run_tool, metadata_quorum, dump_log) and one node's process (Node).
- quorum: MixedQuorum, a controller quorum of Kafka controllers and kraftd nodes.
- brokers: a real Kafka broker on a quorum (broker_node) and log waits (wait_log).
- broker_cluster: brokers on controllers of one kind, with authorization and SASL (start) or for tools (ToolCluster).
- broker_load: acked producing, reading back, metadata records of a log directory.
- swarm: a quorum with a kraft-swarm of emulated brokers. heartbeaters, failover: the failover-at-scale harness.
- kp_bridge: our generated objects to and from kafka-python's (the codec oracle).
"""
