"""bench/history_profile.py: the split of a history window, on a hand-built history whose timings are known."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent

from bench.history_profile import converging_windows, profile

T0 = datetime(2026, 12, 5, tzinfo=UTC)


def approx(seconds: float) -> object:
    """Seconds since the epoch as floats keep about a microsecond."""
    return pytest.approx(seconds, abs=1e-5)


def event(event_id: int, at_ms: int, event_type: EventType.ValueType, **attrs: object) -> HistoryEvent:
    e = HistoryEvent(event_id=event_id, event_type=event_type, **attrs)  # type: ignore[arg-type]
    e.event_time.FromDatetime(T0 + timedelta(milliseconds=at_ms))
    return e


def task(kind: str, scheduled_id: int, at_ms: tuple[int, int, int], activity: str = "") -> list[HistoryEvent]:
    """A workflow task or an activity task (`kind`): scheduled, started and completed at these times."""
    E = EventType
    types = {
        "workflow": (
            E.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
            E.EVENT_TYPE_WORKFLOW_TASK_STARTED,
            E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
        ),
        "activity": (
            E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,
            E.EVENT_TYPE_ACTIVITY_TASK_STARTED,
            E.EVENT_TYPE_ACTIVITY_TASK_COMPLETED,
        ),
    }[kind]
    ref = {"scheduled_event_id": scheduled_id}
    first = {"activity_type": {"name": activity}} if activity else {}
    attrs = [
        (f"{kind}_task_{step}_event_attributes", a)
        for step, a in (("scheduled", first), ("started", ref), ("completed", ref))
    ]
    return [
        event(scheduled_id + i, at, t, **({name: a} if a else {}))
        for i, (at, t, (name, a)) in enumerate(zip(at_ms, types, attrs, strict=True))
    ]


def history() -> list[HistoryEvent]:
    """A workflow task (dispatch 10 ms, 10 ms of code) schedules one activity (dispatch 10 ms, runs 100 ms);
    its completion wakes a second workflow task (dispatch 10 ms, 10 ms of code)."""
    return [
        *task("workflow", 1, (0, 10, 20)),
        *task("activity", 4, (20, 30, 130), "octavia.create_pool"),
        *task("workflow", 7, (135, 145, 155)),
    ]


def test_the_split_adds_up_to_the_window() -> None:
    start = T0.timestamp()
    p = profile(history(), start, start + 0.155)
    assert dict(p.activity_s) == {"octavia.create_pool": approx(0.100)}
    assert p.activity_n["octavia.create_pool"] == 1
    assert p.dispatch_s == approx(0.030)
    assert (p.workflow_tasks, p.workflow_task_s) == (2, approx(0.020))
    assert p.rest_s == approx(0.005)  # the completion at 130 ms, the next scheduling at 135 ms


def test_tasks_outside_the_window_are_left_out() -> None:
    start = T0.timestamp()
    p = profile(history(), start + 0.020, start + 0.140)  # the activity only
    assert dict(p.activity_s) == {"octavia.create_pool": approx(0.100)}
    assert (p.workflow_tasks, p.dispatch_s) == (0, approx(0.010))


def test_a_converging_window_runs_from_an_idle_signal_to_the_converged_timer() -> None:
    """A requeue's timer (seconds) does not end a window; a signal while converging does not start one."""
    E = EventType

    def timer(event_id: int, at_ms: int, seconds: int) -> HistoryEvent:
        attrs = {"timer_id": str(event_id), "start_to_fire_timeout": {"seconds": seconds}}
        return event(event_id, at_ms, E.EVENT_TYPE_TIMER_STARTED, timer_started_event_attributes=attrs)

    def signal(event_id: int, at_ms: int) -> HistoryEvent:
        attrs = {"signal_name": "resource_changed"}
        return event(
            event_id,
            at_ms,
            E.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED,
            workflow_execution_signaled_event_attributes=attrs,
        )

    start = T0.timestamp()
    events = [
        signal(1, 0),
        timer(2, 100, 10),
        signal(3, 150),
        timer(4, 300, 600),
        signal(5, 1000),
        timer(6, 1200, 30),
    ]
    windows = converging_windows(events)
    assert [(a - start, b - start) for a, b in windows] == [
        (approx(0.0), approx(0.3)),
        (approx(1.0), approx(1.2)),
    ]
