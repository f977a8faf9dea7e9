"""Where a workflow's time went between two moments, read from its Temporal history alone.

A P4 figure that misses its ratio must say whether the time is the cloud's, Temporal's or osprov's. The
history timestamps each step on the server's clock, so a window of it splits into:

- activities: from an activity's start to its completion (the cloud calls and the waits on the cloud,
  made by osprov's worker), by activity name;
- Temporal dispatch: from a task's scheduling to its start (activity and workflow tasks): the server
  persisting the event and handing the task to a poller;
- workflow tasks: from a workflow task's start to its completion: osprov's workflow code, the SDK, and the
  local activities it runs inside the task (status writes);
- the rest of the window: the server between events (a completion to the next scheduling).

The parts are sequential for the kinds this is used on (one activity at a time), so they add up to the
window; where they overlap (a signal's workflow task while an activity runs), "between events" goes below
zero by the overlap. Times are the server's; the clock never leaves one machine here.

    .venv/bin/python -m bench.history_profile <workflow id>
"""

from __future__ import annotations

import asyncio
import sys
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client

from devenv import stack
from devenv.testing import StackEnv

SCHEDULED = {
    EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED: "activity",
    EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED: "workflow",
}
STARTED = {
    EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED: "activity",
    EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED: "workflow",
}
ENDED = {
    EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED: "activity",
    EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED: "activity",
    EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT: "activity",
    EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED: "workflow",
    EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED: "workflow",
    EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT: "workflow",
}


@dataclass
class Profile:
    window_s: float = 0.0
    activity_s: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))  # by name
    activity_n: Counter[str] = field(default_factory=Counter)
    dispatch_s: float = 0.0  # scheduled -> started, activity and workflow tasks
    workflow_task_s: float = 0.0  # workflow task started -> completed
    workflow_tasks: int = 0

    @property
    def rest_s(self) -> float:
        return self.window_s - sum(self.activity_s.values()) - self.dispatch_s - self.workflow_task_s

    def rows(self) -> dict[str, float | int]:
        """The split as figure extras (seconds rounded to ms)."""
        out: dict[str, float | int] = {"window s": round(self.window_s, 3)}
        for name, seconds in sorted(self.activity_s.items(), key=lambda kv: -kv[1]):
            out[f"{name} s ({self.activity_n[name]}x)"] = round(seconds, 3)
        out["Temporal dispatch s"] = round(self.dispatch_s, 3)
        out[f"workflow tasks s ({self.workflow_tasks}x)"] = round(self.workflow_task_s, 3)
        out["between events s"] = round(self.rest_s, 3)
        return out


def _at(e: HistoryEvent) -> float:
    return e.event_time.ToDatetime().timestamp()


def _scheduled_id(e: HistoryEvent) -> int:
    for attrs in (
        "activity_task_started_event_attributes",
        "activity_task_completed_event_attributes",
        "activity_task_failed_event_attributes",
        "activity_task_timed_out_event_attributes",
        "workflow_task_started_event_attributes",
        "workflow_task_completed_event_attributes",
        "workflow_task_failed_event_attributes",
        "workflow_task_timed_out_event_attributes",
    ):
        if e.HasField(attrs):  # type: ignore[arg-type]
            return int(getattr(e, attrs).scheduled_event_id)
    raise ValueError(f"event {e.event_id} names no scheduled event")


def profile(events: list[HistoryEvent], start: float, end: float) -> Profile:
    """The split of [start, end] (server timestamps, seconds since the epoch)."""
    p = Profile(window_s=end - start)
    scheduled: dict[int, tuple[float, str]] = {}  # scheduled event ID -> (time, activity name or "")
    started: dict[int, float] = {}  # scheduled event ID -> start time
    for e in events:
        at = _at(e)
        if e.event_type in SCHEDULED:
            name = ""
            if e.HasField("activity_task_scheduled_event_attributes"):
                name = e.activity_task_scheduled_event_attributes.activity_type.name
            scheduled[e.event_id] = (at, name)
            continue
        if e.event_type in STARTED:
            sid = _scheduled_id(e)
            started[sid] = at
            if sid in scheduled and start <= scheduled[sid][0] and at <= end:
                p.dispatch_s += at - scheduled[sid][0]
            continue
        kind = ENDED.get(e.event_type)
        if kind is None:
            continue
        sid = _scheduled_id(e)
        began = started.get(sid)
        if began is None or began < start or at > end:
            continue
        if kind == "workflow":
            p.workflow_task_s += at - began
            p.workflow_tasks += 1
        else:
            name = scheduled[sid][1]
            p.activity_s[name] += at - began
            p.activity_n[name] += 1
    return p


# A converged resource's timer: the resync (minutes) or a Server's re-check (30 s). A converging pass's
# timers are shorter (the LoadBalancer's backoff and the Server's settle re-reads stop at 10 s).
CONVERGED_TIMER_S = 30.0


def _converged_timer(e: HistoryEvent) -> bool:
    if not e.HasField("timer_started_event_attributes"):
        return False
    seconds = e.timer_started_event_attributes.start_to_fire_timeout.ToTimedelta().total_seconds()
    return bool(seconds >= CONVERGED_TIMER_S)


def converging_windows(events: list[HistoryEvent]) -> list[tuple[float, float]]:
    """An entity workflow's converging windows: from a signal that found it idle to the timer it starts
    once converged (a resource's apply, then each change)."""
    windows, opened = [], None
    for e in events:
        if opened is None and e.HasField("workflow_execution_signaled_event_attributes"):
            opened = _at(e)
        elif opened is not None and _converged_timer(e):
            windows.append((opened, _at(e)))
            opened = None
    return windows


def split(env: StackEnv, workflow_id: str, measured: Sequence[float]) -> list[dict[str, Any]]:
    """The split of each converging window of `workflow_id`, in order, as figure extras; `measured` are the
    bench's own timings of the same windows, so the time outside the workflow (the bridge's signal, the
    status reaching the bench) is shown too. Missing windows give empty extras."""
    events = asyncio.run(fetch(env, workflow_id))
    out: list[dict[str, Any]] = []
    windows = converging_windows(events)
    for i, took in enumerate(measured):
        if i >= len(windows):
            out.append({})
            continue
        start, end = windows[i]
        rows: dict[str, Any] = profile(events, start, end).rows()
        rows["outside the workflow s"] = round(took - (end - start), 3)
        out.append({f"osprov split: {k}": v for k, v in rows.items()})
    return out


async def fetch(env: StackEnv, workflow_id: str) -> list[HistoryEvent]:
    client = await Client.connect(env.temporal_address, namespace=env.temporal_namespace)
    history = await client.get_workflow_handle(workflow_id).fetch_history()
    return list(history.events)


def main() -> None:
    env = StackEnv.from_env(stack.load_env())
    events = asyncio.run(fetch(env, sys.argv[1]))
    first, last = _at(events[0]), _at(events[-1])
    print(f"{sys.argv[1]}: {datetime.fromtimestamp(first)} + {last - first:.3f} s")
    for key, value in profile(events, first, last).rows().items():
        print(f"  {key}: {value}")


if __name__ == "__main__":
    main()
