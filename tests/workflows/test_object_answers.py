"""An object's answers to its claimants (workflows/keystone/objects.py, `keystone-answer-local`).

A step's answers go as local activities (own.ANSWER), recorded beside the step's sweep report in its last
workflow task. The object's own signal used to cost it a SIGNAL_EXTERNAL initiated/signaled pair and a
third workflow task that only the "signaled" event woke. Runs recorded before still signal
(tests/replay: KeystoneObject*.json)."""

from __future__ import annotations

from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowExecutionStatus

from osprov.api import ownership as own
from osprov.api.ownership import ObjectKey
from tests.workflows.harness import Harness, eventually
from tests.workflows.history import LOCAL_ACTIVITY_MARKER, local_activity


def _local_activities(events: Any) -> list[str]:
    return [
        e.marker_recorded_event_attributes.details["data"].payloads[0].data.decode()
        for e in events
        if e.event_type == EventType.EVENT_TYPE_MARKER_RECORDED
        and e.marker_recorded_event_attributes.marker_name == LOCAL_ACTIVITY_MARKER
    ]


def _timeline(events: Any) -> str:
    out = []
    for e in events:
        what = ""
        if (
            e.HasField("marker_recorded_event_attributes")
            and "data" in e.marker_recorded_event_attributes.details
        ):
            what = e.marker_recorded_event_attributes.details["data"].payloads[0].data[:90].decode()
        out.append(f"{EventType.Name(e.event_type)} {what}")
    return "\n".join(out)


async def test_a_new_objects_answer_is_a_local_activity_not_a_signal_of_its_own(h: Harness) -> None:
    h.cloud.add("domain", name="service", enabled=True)
    wf = await h.apply("Project", {"name": "p1", "domain": "service"})
    await eventually(lambda: bool(h.written.get(wf.id)), "the Project's status")
    assert h.written[wf.id]["conditions"][0]["status"] == "True"
    assert h.written[wf.id]["projectID"] == h.cloud.of("project")[0].id  # the answer carried the ID
    handle = h.env.client.get_workflow_handle(
        h.object_workflow(ObjectKey(kind="project", domain="service", name="p1"))
    )
    # The answer reaches the Project from inside the object's task, before that task completes and its
    # markers are in the history: wait for the step's last one, the sweep report.
    events: Any = []

    async def reported() -> bool:
        nonlocal events
        events = (await handle.fetch_history()).events
        markers = _local_activities(events)
        return any("ownership.sweep_report" in m for m in markers) and any(
            own.ANSWER.name in m for m in markers
        )

    await eventually(reported, "the object's answer and sweep report in its history")
    kinds = [e.event_type for e in events]
    assert EventType.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED not in kinds
    assert EventType.EVENT_TYPE_EXTERNAL_WORKFLOW_EXECUTION_SIGNALED not in kinds
    answers = [m for m in _local_activities(events) if own.ANSWER.name in m]
    assert len(answers) == 1, _local_activities(events)
    # The answer and the step's sweep report are the step's last markers, sent together (patch
    # keystone-watchers-told-local) after the create's completion woke it (a loaded machine may split a
    # task's local activities into several; the signal's own events and the task they woke are what went).
    names = [la[0] for la in map(local_activity, events) if la is not None]
    last = sorted(names[-2:])
    assert last == sorted([own.ANSWER.name, "ownership.sweep_report"]), _timeline(events)


async def test_an_answer_to_a_claimant_whose_workflow_is_gone_drops_its_claim(h: Harness) -> None:
    """The claimant's workflow ended without releasing (terminated): the answer finds no workflow, and the
    object forgets the claim instead of answering it forever."""
    h.cloud.add("domain", name="service", enabled=True)
    h.cloud.hold_claims = 1
    wf = await h.apply("Project", {"name": "p1", "domain": "service"})
    await eventually(lambda: bool(h.cloud.held), "the held claim")
    await wf.terminate("gone without releasing")
    await h.deliver_held()
    object_id = h.object_workflow(ObjectKey(kind="project", domain="service", name="p1"))
    handle = h.env.client.get_workflow_handle(object_id)

    async def dropped() -> bool:
        state: Any = await handle.query(own.QUERY_OBJECT)
        return state["passes"] >= 1 and state["claims"] == []

    await eventually(dropped, "the claim dropped")
    events = (await handle.fetch_history()).events
    assert [m for m in _local_activities(events) if own.ANSWER.name in m]  # it did try to answer
    assert (await handle.describe()).status in (
        WorkflowExecutionStatus.RUNNING,
        WorkflowExecutionStatus.COMPLETED,
    )
