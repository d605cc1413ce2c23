"""The active controller's session check runs when the first broker session ends (kraftd.controller.brokers
.next_check_ms; kraftd.shell.controller.broker_rpcs contract 2), as Kafka's controller schedules its stale-broker
check at BrokerHeartbeatManager.nextCheckTimeNs: a killed broker is fenced at its session's end, not at the next
once-a-second check (issue 24: broker failure at 1M partitions took up to a second more than the session)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from kraftd.controller import brokers
from kraftd.shell.controller import broker_rpcs
from kraftd.shell.controller.broker_rpcs import ControllerRpcs
from tests.helpers.controller import apply_records
from tests.helpers.controller import cluster as _cluster


def test_the_next_check_is_the_first_unfenced_session_end() -> None:
    image, hb = _cluster(3)
    hb.touch(1, 5_000)
    hb.touch(2, 3_000)
    hb.touch(3, 1_000)
    apply_records(image, brokers.fence(image, 3))  # a fenced broker's session no longer counts
    assert brokers.next_check_ms(image, hb) == 3_000 + hb.session_timeout_ms
    assert brokers.expired(image, hb, 3_000 + hb.session_timeout_ms - 1) == []
    assert brokers.expired(image, hb, 3_000 + hb.session_timeout_ms) == [2]  # due exactly then
    assert brokers.next_check_ms(image, brokers.Heartbeats()) is None


def _rpcs(image: Any, hb: brokers.Heartbeats, now: int, active: bool = True) -> ControllerRpcs:
    rpcs = ControllerRpcs.__new__(ControllerRpcs)
    rpcs.heartbeats = hb
    rpcs.node = SimpleNamespace(
        controller=SimpleNamespace(machine=SimpleNamespace(active=active, committed=image))
    )  # type: ignore[assignment]
    rpcs.now_ms = lambda: now  # type: ignore[method-assign]
    return rpcs


def test_the_session_check_sleeps_until_the_first_session_ends_not_a_whole_second() -> None:
    image, hb = _cluster(2)
    hb.touch(1, 0)
    hb.touch(2, 500)
    timeout = hb.session_timeout_ms
    assert (
        abs(_rpcs(image, hb, timeout - 300).fence_check_delay_s() - 0.301) < 1e-9
    )  # broker 1 ends in 300 ms
    assert _rpcs(image, hb, timeout + 50).fence_check_delay_s() == broker_rpcs.MIN_CHECK_S  # overdue: at once
    assert _rpcs(image, hb, 0).fence_check_delay_s() == broker_rpcs.CHECK_S  # far off: the periodic bound
    assert _rpcs(image, hb, timeout - 300, active=False).fence_check_delay_s() == broker_rpcs.CHECK_S
