"""What a controller operation returns: Kafka's ``ControllerResult(records, response)``.

Contracts:
1. ``records`` are the operation's records, to be appended as one atomic batch (none: nothing to write, the
   response is given at once). ``response`` is the generated response object to send once they commit.
2. ``failed(code)`` is the response Kafka gives when the write itself fails (the node is not, or stops being,
   the active controller: NOT_CONTROLLER), in the API's own error shape.
3. ``notes`` are the info lines the shell logs when it takes the result, before writing; ``done`` the ones it
   logs once the records committed (format and arguments, for the ``kraftd.controller`` logger). Values from a
   peer are formatted with %r there, so a peer cannot forge a line.
4. Built by the sans-IO operations of kraftd.controller.ops; the shell only writes, waits and sends
   (kraftd.shell.controller.glue contract 5).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from kwire.errors import ErrorCode

R = TypeVar("R")
LogLine = tuple[str, tuple[Any, ...]]


@dataclass(frozen=True, slots=True)
class ControllerResult(Generic[R]):
    records: Sequence[Any]
    response: R
    failed: Callable[[ErrorCode], R]
    notes: Sequence[LogLine] = ()
    done: Sequence[LogLine] = ()


def from_builder(
    records: Sequence[Any],
    build: Callable[[ErrorCode], R],
    notes: Sequence[LogLine] = (),
    done: Sequence[LogLine] = (),
) -> ControllerResult[R]:
    """A result whose response and failure response come from one builder: ``build(NONE)`` once committed,
    ``build(code)`` when the write failed with ``code`` (contract 2)."""
    return ControllerResult(records, build(ErrorCode.NONE), build, notes, done)
