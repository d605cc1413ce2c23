"""Operator command-line tools (click), verbs and flags mirroring Kafka's."""
