"""ApiVersions advertises the KIP-630/853 RPCs the core serves (issue 10: it advertised none of them)."""

from __future__ import annotations

from kraftd.shell.apis import handlers, table


def test_snapshot_and_voter_rpcs_are_advertised_at_their_full_ranges() -> None:
    served = table.supported_versions()
    assert served[59] == (0, 1)  # FetchSnapshot
    assert served[81] == (0, 0)  # RemoveRaftVoter
    assert served[82] == (0, 0)  # UpdateRaftVoter
    assert {59, 81, 82} <= handlers.CORE_APIS


def test_the_table_is_what_the_node_serves_dispatches_and_authorizes() -> None:
    """issue 23: ApiVersions, the forwardable set, the authorizer's rules and dispatch all read one table."""
    from kraftd.shell.apis.routing import FORWARDED, RequestRouter
    from kwire.authz import UNAUTHORIZED_FREE

    assert table.supported_versions() == {k: a.versions for k, a in table.TABLE.items()}
    assert set(FORWARDED) == {k for k, a in table.TABLE.items() if a.forwarded} and len(FORWARDED) == 20
    assert set(table.RULES) == set(table.TABLE) - UNAUTHORIZED_FREE
    assert table.RULE_BOOK.rule_of(38, forwarded=True).operation == "CREATE_TOKENS"
    assert table.RULE_BOOK.rule_of(38).operation == "ALTER"
    parts = RequestRouter(None).parts  # type: ignore[arg-type]  # binds lazily: no node needed to list parts
    assert {a.part for a in table.TABLE.values()} - set(parts) == {table.Part.VERSIONS}
    assert handlers.CORE_APIS == {1, 52, 53, 54, 59, 80, 81, 82, 650}
