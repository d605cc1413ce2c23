"""kraft.version 0 -> 1 through UpdateFeatures (KIP-853 as Kafka 4.x ships it: LeaderState's upgrade).

Invariants (Kafka's checks and messages):
1. Only the leader upgrades; asking for the version in force is a no-op; a lower version is refused
   (INVALID_UPDATE_VERSION, "... because the new version is a downgrade"); only 1 exists above 0.
2. The upgrade needs every voter's directory id and kraft.version range, which voters report to each new
   leader with UpdateRaftVoter (remembered at kraft.version 0 without a record); the leader knows its own.
   A voter not heard from, or one whose range excludes 1, refuses the upgrade (INVALID_UPDATE_VERSION).
3. On success (and not validate-only) one control batch holds KRaftVersion(1) then Voters(the voter set with
   directory ids and listeners); from there on the log's voter records are honoured (kraftd.core.voters 4).
"""

from __future__ import annotations

from kraftd.core.context import NodeContext
from kraftd.core.states import Leader
from kraftd.core.types import VoterSet
from kraftd.core.voters import KRAFT_VERSION_MAX, kraft_version_record, voters_record
from kwire.control import ControlRecordType as CT
from kwire.errors import ErrorCode


def _name(version: int) -> str:
    return f"KRAFT_VERSION_{version}"


def upgrade(node: NodeContext, version: int, validate_only: bool) -> tuple[ErrorCode, str | None]:
    d = node.data
    if not isinstance(d, Leader):
        return ErrorCode.NOT_CONTROLLER, None
    hist = node.voter_history
    current = hist.kraft_version
    if version == current:
        return ErrorCode.NONE, None
    if version < current:
        return ErrorCode.INVALID_UPDATE_VERSION, (
            f"Invalid upgrade of kraft.version from version {_name(current)} to {_name(version)} because the new "
            "version is a downgrade"
        )
    if version > KRAFT_VERSION_MAX:
        return (
            ErrorCode.INVALID_UPDATE_VERSION,
            f"Invalid update version {version} for feature kraft.version.",
        )
    heard = dict(node.volatile_voters)
    own = node.config.local_listeners
    heard[node.local.id] = (node.local, own, (0, KRAFT_VERSION_MAX))
    voters = node.voters
    if any(i not in heard or heard[i][0].directory_id is None for i in voters.ids):
        return ErrorCode.INVALID_UPDATE_VERSION, (
            f"Invalid upgrade of kraft.version from version {_name(current)} to {_name(version)}"
        )
    if any(not heard[i][2][0] <= version <= heard[i][2][1] for i in voters.ids):
        return ErrorCode.INVALID_UPDATE_VERSION, (
            f"Invalid upgrade of kraft.version to {_name(version)} because not all of the voters support it"
        )
    if not validate_only:
        upgraded = VoterSet(
            tuple(heard[i][0] for i in voters.ids),
            tuple((i, heard[i][1] or voters.endpoints_of(i)) for i in voters.ids),
        )
        node.append_control(
            [(CT.KRAFT_VERSION, kraft_version_record(version)), (CT.KRAFT_VOTERS, voters_record(upgraded))]
        )
    return ErrorCode.NONE, None
