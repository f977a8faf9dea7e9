"""What a run is doing, read from its history: the time-skipping server's blind spots, worked around.

The time-skipping test server has two bugs an entity-loop test walks into:
- it strands a run whose workflow task cancels a timer that fired while the task was with the worker
  (it refuses the completion, "invalid history builder state for action", temporalio/sdk-java#3088,
  and never retries the task). A signal wakes the entity loop, which cancels its wait timer, so a test
  signals only a settled run whose next timer is not due soon;
- terminating a run whose activity is in flight leaves that activity pending, and a pending activity
  holds the server's clock (time then runs at real pace for every later test). A test terminates only
  a settled run.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from temporalio.api.enums.v1 import EventType as E
from temporalio.client import WorkflowHandle
from temporalio.testing import WorkflowEnvironment

_WFT_CLOSED = {
    E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
    E.EVENT_TYPE_WORKFLOW_TASK_FAILED,
    E.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT,
}
_RUN_CLOSED = {
    E.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
    E.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
    E.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED,
    E.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED,
    E.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT,
    E.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW,
}


@dataclass
class RunState:
    closed: bool = False
    task_in_flight: bool = False
    activities: set[int] = field(default_factory=set)  # scheduled event IDs not yet closed
    timers: dict[str, tuple[datetime, float]] = field(default_factory=dict)  # id -> (due UTC, duration s)

    @property
    def settled(self) -> bool:
        return self.closed or not (self.task_in_flight or self.activities)


async def read(handle: WorkflowHandle[Any, Any]) -> RunState:
    st = RunState()
    async for e in handle.fetch_history_events():
        t = e.event_type
        st.closed = t in _RUN_CLOSED
        if t == E.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
            st.task_in_flight = True
        elif t in _WFT_CLOSED:
            st.task_in_flight = False
        elif t == E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            st.activities.add(e.event_id)
        elif t == E.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            st.activities.discard(e.activity_task_completed_event_attributes.scheduled_event_id)
        elif t == E.EVENT_TYPE_ACTIVITY_TASK_FAILED:
            st.activities.discard(e.activity_task_failed_event_attributes.scheduled_event_id)
        elif t == E.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT:
            st.activities.discard(e.activity_task_timed_out_event_attributes.scheduled_event_id)
        elif t == E.EVENT_TYPE_ACTIVITY_TASK_CANCELED:
            st.activities.discard(e.activity_task_canceled_event_attributes.scheduled_event_id)
        elif t == E.EVENT_TYPE_TIMER_STARTED:
            a = e.timer_started_event_attributes
            duration = a.start_to_fire_timeout.ToTimedelta()
            st.timers[a.timer_id] = (e.event_time.ToDatetime() + duration, duration.total_seconds())
        elif t == E.EVENT_TYPE_TIMER_FIRED:
            st.timers.pop(e.timer_fired_event_attributes.timer_id, None)
        elif t == E.EVENT_TYPE_TIMER_CANCELED:
            st.timers.pop(e.timer_canceled_event_attributes.timer_id, None)
    return st


async def settle(env: WorkflowEnvironment, workflow_id: str, deadline_s: float = 30.0) -> RunState:
    """Wait (real-time deadline) until the current run has no workflow task or activity in flight."""
    latest = env.client.get_workflow_handle(workflow_id)  # the current run, after continue-as-new
    end = time.monotonic() + deadline_s
    while not (st := await read(latest)).settled:
        if time.monotonic() > end:
            raise AssertionError(f"workflow {workflow_id} did not settle in {deadline_s:.0f} s")
        await asyncio.sleep(0.02)
    return st


async def quiet_timers(env: WorkflowEnvironment, workflow_id: str, guard_s: float) -> None:
    """Settle the run and let a timer about to fire fire, so that a signal sent now cannot race it.

    Between skips the server's clock runs at real pace, so "about to fire" is due within `guard_s`;
    a timer shorter than that is waited out until it has just been restarted (the most room there is)."""
    for _ in range(20):
        st = await settle(env, workflow_id)
        if st.closed:
            return
        now = (await env.get_current_time()).astimezone(UTC).replace(tzinfo=None)
        left = [((due - now).total_seconds(), duration) for due, duration in st.timers.values()]
        soon = [s for s, duration in left if s < min(guard_s, 0.8 * duration)]
        if not soon:
            return
        await env.sleep(max(soon) + 0.05)
    raise AssertionError(f"workflow {workflow_id} keeps a timer about to fire")
