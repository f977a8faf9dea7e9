"""activities/cloud.py's poll: the one wait loop of every cloud wait (Nova, Cinder, Octavia), without a cloud.

The clock is asyncio's sleep, replaced by one that records what it was asked and returns at once: the
tests check the schedule of reads, never how long anything took.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from osprov.activities import cloud

NOW = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("seen_before_now_s", "delay_s"),
    [
        (0.0, 0.5),  # seen busy just now: one whole interval
        (0.2, 0.3),  # the workflow's round trip took 0.2 s: the rest of the interval
        (0.5, 0.0),  # an interval ago: read at once
        (3600.0, 0.0),  # long past (a retried attempt, a restarted worker): read at once
        (-5.0, 0.5),  # a clock behind the workflow's: never more than one interval
    ],
)
def test_first_read_delay_is_the_rest_of_one_interval(seen_before_now_s: float, delay_s: float) -> None:
    seen = NOW - timedelta(seconds=seen_before_now_s)
    assert cloud.first_read_delay(seen, 0.5, NOW) == pytest.approx(delay_s)


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


async def test_without_a_busy_time_the_first_read_is_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    r = Recorder(["BUILD", "ACTIVE"])
    monkeypatch.setattr(cloud.asyncio, "sleep", r.sleep)
    assert await cloud.poll(r.read, lambda s: s == "ACTIVE", 0.5, 60) == "ACTIVE"
    assert r.log == ["read BUILD", "sleep 0.5", "read ACTIVE"]


async def test_a_fresh_busy_time_puts_the_first_read_one_interval_after_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The create just answered BUILD: no read at once (it would find BUILD again), the first one comes an
    interval after the answer, as a plain script that writes, sleeps and reads."""
    r = Recorder(["ACTIVE"])
    monkeypatch.setattr(cloud.asyncio, "sleep", r.sleep)
    seen = datetime.now(UTC) + timedelta(seconds=60)  # ahead: the delay is capped at one interval
    assert await cloud.poll(r.read, lambda s: s == "ACTIVE", 0.5, 60, busy_seen_at=seen) == "ACTIVE"
    assert r.log == ["sleep 0.5", "read ACTIVE"]


async def test_a_busy_time_long_past_reads_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    r = Recorder(["ACTIVE"])
    monkeypatch.setattr(cloud.asyncio, "sleep", r.sleep)
    seen = datetime.now(UTC) - timedelta(hours=1)
    assert await cloud.poll(r.read, lambda s: s == "ACTIVE", 0.5, 60, busy_seen_at=seen) == "ACTIVE"
    assert r.log == ["sleep 0.0", "read ACTIVE"]
