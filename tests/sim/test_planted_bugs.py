"""The simulator proves it can fail: each planted bug is caught within the CI seed budget (seeds are
swept in CI order, stopping at the first failure), and caught by the check that names that bug."""

from __future__ import annotations

import os

import pytest

from kraftd.core.config import BugFlags
from kraftd.sim.runner import run_many

# The CI budget; never below 2000 here, since the sweep stops at the first catch and stays fast anyway.
SEEDS = max(2000, int(os.environ.get("KRAFTD_SIM_SEEDS", "6000")))

EXPECTED = {
    "ack_before_flush": "invariant (7)",
    "commit_old_epoch": "invariant (3)",  # a later leader lacks the wrongly committed record
    "no_check_quorum": "zombie leader",
    "double_vote": "invariant (1)",
    "snapshot_missing_record": "invariant (9)",  # the snapshot differs from the replay of the log
    "reconfig_before_commit": "invariant (10)",  # the single-server membership bug
    "two_uncommitted_changes": "invariant (10)",
    "report_inherited_hwm": "invariant (11)",  # a follower would be told a lower HWM (Kafka exits)
    "read_without_confirm": "invariant (12)",  # a zombie leader serves a read that misses acked writes
    "read_without_read_offset": "invariant (12)",  # a follower serves what it happens to have applied
    "add_before_commit": "changed voters before committing in its own epoch",  # invariant (10)
    "add_while_uncommitted": "uncommitted voter sets",  # invariant (10)
    "auto_join_rejoins": "KAFKA-19850",  # invariant (10): a removed voter auto-joined back
}
# Bugs only the membership scenario can reach (AddRaftVoter, auto-join): swept over it alone, so the catch is
# counted in its seeds (the test asserts the bound).
ONLY = {
    "add_before_commit": "membership",
    "add_while_uncommitted": "membership",
    "auto_join_rejoins": "membership",
}
WITHIN = {"add_before_commit": 60, "add_while_uncommitted": 10, "auto_join_rejoins": 10}


@pytest.mark.parametrize("bug", sorted(EXPECTED))
def test_planted_bug_is_caught(bug: str) -> None:
    names = [ONLY[bug]] if bug in ONLY else None
    seeds = range(WITHIN.get(bug, SEEDS))
    sweep = run_many(seeds, names, bugs=BugFlags(**{bug: True}), stop_on_failure=True)
    failures = sweep.failures
    assert failures, f"{bug} survived {len(seeds)} seeds"
    first = failures[0]
    assert EXPECTED[bug] in first.error or (bug == "commit_old_epoch" and "invariant (4)" in first.error), (
        first.report()
    )
    assert first.trace, "a failing seed must come with its trace"


def test_without_bugs_the_same_seeds_pass() -> None:
    sweep = run_many(range(24))
    assert not sweep.failures, sweep.failures[0].report()
