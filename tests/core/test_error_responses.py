"""kraftd.core.messages invariant 3: every request the core sends has an error response the shell can hand back
when the peer never answers (a missing one crashed a follower whose UpdateRaftVoter met a killed leader)."""

from __future__ import annotations

import re
from pathlib import Path

import generated
from kraftd.core import messages
from kwire.errors import ErrorCode

CORE = Path(messages.__file__).parent
GENERATED = Path(generated.__file__).parent


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _requests_the_core_builds() -> set[str]:
    """Names of generated request classes constructed anywhere in kraftd/core."""
    found: set[str] = set()
    for path in CORE.glob("*.py"):
        found |= set(re.findall(r"\b([A-Z][A-Za-z]+Request)\(", path.read_text()))
    return {n for n in found if (GENERATED / f"{_snake(n)}.py").exists()}


def test_every_request_the_core_builds_has_an_error_response() -> None:
    built = _requests_the_core_builds()
    assert {"VoteRequest", "FetchRequest", "UpdateRaftVoterRequest", "AddRaftVoterRequest"} <= built
    known = {cls.__name__: cls for cls in messages._RESPONSE_OF}
    missing = sorted(built - set(known))
    assert not missing, f"no error response for {missing}"
    for name in built:
        resp = messages.error_response(known[name](), ErrorCode.REQUEST_TIMED_OUT)
        assert type(resp).__name__ == name.removesuffix("Request") + "Response"
