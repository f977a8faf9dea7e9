"""Reading a run's history in tests: its length (bounded history) and its Web UI labels (summaries)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client

LABELLED = {
    EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED: "activity",
    EventType.EVENT_TYPE_TIMER_STARTED: "timer",
    EventType.EVENT_TYPE_MARKER_RECORDED: "local activity",
}
LOCAL_ACTIVITY_MARKER = "core_local_activity"  # the other markers (patches) are not on the timeline


def local_activity(event: HistoryEvent) -> tuple[str, Any] | None:
    """(activity type, JSON result) of a local activity's marker; None for any other event."""
    if (
        event.event_type != EventType.EVENT_TYPE_MARKER_RECORDED
        or event.marker_recorded_event_attributes.marker_name != LOCAL_ACTIVITY_MARKER
    ):
        return None
    details = event.marker_recorded_event_attributes.details
    name = json.loads(details["data"].payloads[0].data)["activity_type"]
    data = details["result"].payloads[0].data if "result" in details else b""
    result = json.loads(data) if data else None  # a None result is an empty binary/null payload
    return name, result


def local_activity_results(events: Iterable[HistoryEvent], name: str) -> list[Any]:
    """The results of the local activities named `name`, in the order of their markers."""
    return [la[1] for la in map(local_activity, events) if la is not None and la[0] == name]


@dataclass(frozen=True)
class Run:
    run_id: str
    events: list[HistoryEvent]


async def current_run(client: Client, workflow_id: str) -> Run:
    """The latest run of the workflow (after continue-as-new) and its whole history."""
    handle = client.get_workflow_handle(workflow_id)
    run_id = (await handle.describe()).run_id
    history = await client.get_workflow_handle(workflow_id, run_id=run_id).fetch_history()
    return Run(run_id, list(history.events))


async def timeline(client: Client, workflow_id: str) -> list[tuple[str, str | None]]:
    """(activity|timer|local activity, summary) of every activity and timer the current run started, in order: what the
    Web UI's timeline shows. Summaries are payloads: decoded with the client's data converter."""
    labels: list[tuple[str, str | None]] = []
    for e in (await current_run(client, workflow_id)).events:
        kind = LABELLED.get(e.event_type)
        if kind is None or (
            e.HasField("marker_recorded_event_attributes")
            and e.marker_recorded_event_attributes.marker_name != LOCAL_ACTIVITY_MARKER
        ):
            continue
        summary: str | None = None
        if e.user_metadata.HasField("summary"):
            [summary] = await client.data_converter.decode([e.user_metadata.summary], [str])
        labels.append((kind, summary))
    return labels


_PREFIXES = re.compile(r"^(re-check: |retry after: )?([A-Z]\d+[a-z]?'?: )?")


def reads_as_sentence(summary: str | None) -> bool:
    """Words that say what is done or awaited, not a bare number: past an optional "re-check: " and step
    label ("P7a: "), at least three words, the first one a word of letters."""
    if not summary:
        return False
    words = _PREFIXES.sub("", summary).split()
    return len(words) >= 3 and words[0].replace("-", "").isalpha()


@dataclass(frozen=True)
class Scheduled:
    """An activity the run scheduled: its input, and the workflow task that scheduled it (from its start to
    the scheduling event, which the task's completion wrote)."""

    input: Any
    task_started: datetime
    scheduled: datetime

    def within_its_task(self, at: datetime | None) -> bool:
        """Was `at` taken inside that workflow task (workflow.now() there)? The time-skipping server's event
        times keep milliseconds, so each bound has one millisecond of slack."""
        slack = timedelta(milliseconds=1)
        return at is not None and self.task_started - slack <= at <= self.scheduled + slack


async def scheduled_activities(
    client: Client, workflow_id: str, activity: str, input_type: type
) -> list[Scheduled]:
    """Each `activity` the current run scheduled, its input decoded with the client's data converter."""
    events = (await current_run(client, workflow_id)).events
    found: list[Scheduled] = []
    task_started: datetime | None = None  # the workflow task whose commands follow (its completion event)
    for e in events:
        if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED:
            task_started = e.event_time.ToDatetime(tzinfo=UTC)
        if not e.HasField("activity_task_scheduled_event_attributes"):
            continue
        attrs: Any = e.activity_task_scheduled_event_attributes
        if attrs.activity_type.name != activity:
            continue
        assert task_started is not None
        [arg] = await client.data_converter.decode(list(attrs.input.payloads), [input_type])
        found.append(Scheduled(arg, task_started, e.event_time.ToDatetime(tzinfo=UTC)))
    return found
