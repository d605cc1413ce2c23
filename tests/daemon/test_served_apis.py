"""ApiVersions advertises the KIP-630/853 RPCs the core serves (issue 10: it advertised none of them)."""

from __future__ import annotations

from kraftd.shell.apis import handlers


def test_snapshot_and_voter_rpcs_are_advertised_at_their_full_ranges() -> None:
    served = handlers.supported_versions()
    assert served[59] == (0, 1)  # FetchSnapshot
    assert served[81] == (0, 0)  # RemoveRaftVoter
    assert served[82] == (0, 0)  # UpdateRaftVoter
    assert {59, 81, 82} <= handlers.CORE_APIS
