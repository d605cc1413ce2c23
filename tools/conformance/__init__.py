"""``kraft-conformance``: a black-box battery of KRaft protocol checks against any controller quorum.

Each check has an id, a one-line statement, the Kafka source whose behaviour it follows, and ends PASS, FAIL or
SKIP with evidence (every request sent and response received, decoded with the generated codecs). Checks that
craft Raft messages (votes, epochs, voter changes) run only with ``--intrusive``, on a test quorum.
"""
