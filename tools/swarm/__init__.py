"""kraft-swarm: emulated Kafka brokers against a controller quorum (docs/SWARM.md)."""
