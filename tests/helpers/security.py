"""Helpers shared by the security tests."""

from __future__ import annotations

from kwire.authz import AclEntry


# ---- first written for tests/security/test_image_security.py -----------------------------------------------
def entry(
    principal="User:alice",
    op="DESCRIBE",
    allow=True,
    host="*",
    name="kafka-cluster",
    pattern="LITERAL",
    kind=None,
):
    kind = kind or ("CLUSTER" if name in ("kafka-cluster", "*") or name.startswith("kafka") else "TOPIC")
    return AclEntry(kind, name, pattern, principal, host, op, allow)
