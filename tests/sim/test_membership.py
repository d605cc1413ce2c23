"""The membership scenario does what it claims (so its quiet seeds mean something): starting from one voter,
committed voter sets grow to five through AddRaftVoter (with the leader's ApiVersions probe answered by the
simulated shell) and through auto-join, and shrink back, one voter at a time, with every invariant on."""

from __future__ import annotations

from kraftd.sim.harness import Harness
from kraftd.sim.membership_scenarios import membership_changes

SEEDS = range(8)


def test_voter_sets_grow_to_five_and_shrink_from_one_standalone_voter() -> None:
    sizes: list[list[int]] = []
    auto_joins = 0
    for seed in SEEDS:
        h = Harness(seed)
        membership_changes(h)
        checker = h.c.checker
        assert checker.voter_sets[0] == (0,), "the quorum starts from the standalone voter"
        assert checker.voters_changed
        sizes.append([len(s) for s in checker.voter_sets])
        auto_joins += checker.auto_joins
        # a joiner started with no voter set and learned it from the log it fetched through bootstrap servers
        assert not h.c.start_voters[1].voters and h.c.bootstrap_servers == {-2: 0, -3: 1, -4: 2, -5: 3, -6: 4}
    assert any(5 in s for s in sizes), sizes
    assert all(max(s) >= 2 and s[-1] < max(s) for s in sizes), sizes  # every seed grows, then shrinks
    assert auto_joins > 0
