"""activities/cloud.py's poll: the one wait loop of every cloud wait (Nova, Cinder, Octavia), without a cloud.

The clock is asyncio's sleep, replaced by one that records what it was asked and returns at once: the
tests check the schedule of reads, never how long anything took.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from osprov.activities import cloud

NOW = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("seen_before_now_s", "delay_s"),
    [
        (0.0, 0.5),  # seen busy just now: the second read one interval later
        (0.1, 0.4),  # the workflow's round trip took 0.1 s: the rest of the interval
        (0.2, 0.3),
        (0.3, 0.5),  # less than half an interval left: a whole interval (no two reads back to back)
        (0.5, 0.5),  # an interval ago
        (3600.0, 0.5),  # long past (a retried attempt, a restarted worker): as without a time
        (-5.0, 0.5),  # a clock behind the workflow's: never more than one interval
    ],
)
def test_second_read_delay_keeps_the_cadence_of_the_change(seen_before_now_s: float, delay_s: float) -> None:
    seen = NOW - timedelta(seconds=seen_before_now_s)
    assert cloud.second_read_delay(seen, 0.5, NOW) == pytest.approx(delay_s)


class Recorder:
    """Stands for the cloud (each read returns the next state) and for asyncio.sleep (records, returns)."""

    def __init__(self, states: list[str]) -> None:
        self.states = states
        self.log: list[str] = []

    def read(self) -> str:
        state = self.states.pop(0)
        self.log.append(f"read {state}")
        return state

    async def sleep(self, seconds: float) -> None:
        self.log.append(f"sleep {seconds:.1f}")


def active(state: str) -> bool:
    return state == "ACTIVE"


async def test_without_a_busy_time_reads_come_every_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    r = Recorder(["BUILD", "BUILD", "ACTIVE"])
    monkeypatch.setattr(cloud.asyncio, "sleep", r.sleep)
    assert await cloud.poll(r.read, active, 0.5, 60) == "ACTIVE"
    assert r.log == ["read BUILD", "sleep 0.5", "read BUILD", "sleep 0.5", "read ACTIVE"]


async def test_a_quick_change_is_seen_by_the_first_read_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """E.g. a volume delete Cinder finishes before the workflow's wait starts: no sleep at all."""
    r = Recorder(["ACTIVE"])
    monkeypatch.setattr(cloud.asyncio, "sleep", r.sleep)
    assert await cloud.poll(r.read, active, 0.5, 60, busy_seen_at=datetime.now(UTC)) == "ACTIVE"
    assert r.log == ["read ACTIVE"]


async def test_after_the_first_read_the_reads_keep_the_changes_cadence(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The create answered BUILD 0.2 s ago (the workflow's round trip): the second read comes at most 0.3 s
    after the first, one interval after the answer, as a script that writes and reads every interval (not
    a whole interval after the first read); then every interval."""
    r = Recorder(["BUILD", "BUILD", "ACTIVE"])
    monkeypatch.setattr(cloud.asyncio, "sleep", r.sleep)
    monkeypatch.setattr(cloud, "datetime", Frozen)  # poll's wall clock reads NOW
    seen = NOW - timedelta(seconds=0.2)
    assert await cloud.poll(r.read, active, 0.5, 60, busy_seen_at=seen) == "ACTIVE"
    assert r.log[0] == "read BUILD" and r.log[2:] == ["read BUILD", "sleep 0.5", "read ACTIVE"]
    pause = float(r.log[1].removeprefix("sleep "))
    assert 0.0 <= pause <= 0.3  # 0.3 less the time the first read took


class Frozen(datetime):
    @classmethod
    def now(cls, tz: Any = None) -> Frozen:
        return cls.fromtimestamp(NOW.timestamp(), UTC)
