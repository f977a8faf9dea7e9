"""Fail closed: with codec keys, a client without the codec cannot make the worker act.

A real Temporal (the dev server) and the production workflows, with stub activities that record every
call. Whoever reaches the frontend can start or signal a workflow; the worker's codec rejects the
plaintext input, so the workflow task fails (WorkflowTaskFailed in history, its failure encrypted too)
and no activity is ever scheduled. The same start through osprov's client does act: the control that
keeps this test from passing on a worker that does nothing.
"""

from __future__ import annotations

import base64
import json
import secrets
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest_asyncio
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.exceptions import ApplicationError
from temporalio.worker import Worker

from osprov.activities import keystone_sweep
from osprov.api.messages import SIGNAL_RESOURCE_CHANGED, EntityInput, ResourceChange, ResourceRef
from osprov.runtime.codec import AesGcmCodec, parse_keys
from osprov.runtime.temporal import data_converter
from osprov.workflows.all import WORKFLOWS
from tests.workflows.fakes import FakeCloud
from tests.workflows.harness import CONFIG, eventually

KEY = base64.b64encode(secrets.token_bytes(32)).decode()
CODEC = AesGcmCodec(parse_keys(f"live:{KEY}"), "live")


class Setup:
    def __init__(self, secure: Client, plain: Client, cloud: FakeCloud, queue: str) -> None:
        self.secure, self.plain, self.cloud, self.queue = secure, plain, cloud, queue

    def change(self, name: str, generation: int = 1, **spec: Any) -> tuple[ResourceRef, ResourceChange]:
        ref = ResourceRef(kind="Project", namespace="ns", name=name, uid=str(uuid.uuid4()))
        body = {"name": name, "domain": "service"} | spec
        return ref, ResourceChange(ref=ref, generation=generation, spec=body)

    async def start(self, client: Client, ref: ResourceRef, change: ResourceChange) -> str:
        handle = await client.start_workflow(
            "Project",
            EntityInput(ref=ref, config=CONFIG),
            id=ref.workflow_id,
            task_queue=self.queue,
            start_signal=SIGNAL_RESOURCE_CHANGED,
            start_signal_args=[change],
        )
        return handle.id

    async def events(self, workflow_id: str) -> list[HistoryEvent]:
        return list((await self.plain.get_workflow_handle(workflow_id).fetch_history()).events)

    async def task_failure(self, workflow_id: str, after: int = 0) -> dict[str, Any]:
        """The first WorkflowTaskFailed after event `after`, its failure decrypted with the worker's key."""
        found: list[HistoryEvent] = []

        async def failed() -> bool:
            found[:] = [
                e
                for e in await self.events(workflow_id)
                if e.event_id > after and e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED
            ]
            return bool(found)

        await eventually(failed, f"{workflow_id}: a failed workflow task", 30)
        failure = found[0].workflow_task_failed_event_attributes.failure
        assert failure.message == "Encoded failure" and not failure.stack_trace  # encrypted as well
        [attrs] = await CODEC.decode([failure.encoded_attributes])
        return json.loads(attrs.data)  # type: ignore[no-any-return]


@pytest_asyncio.fixture
async def setup(frontend: str) -> AsyncIterator[Setup]:
    secure = await Client.connect(frontend, data_converter=data_converter(CODEC))
    plain = await Client.connect(frontend, data_converter=pydantic_data_converter)
    cloud = FakeCloud()
    cloud.add("domain", name="service", enabled=True)
    queue = f"fail-closed-{uuid.uuid4()}"
    async with Worker(secure, task_queue=queue, workflows=WORKFLOWS, activities=cloud.activities()):
        yield Setup(secure, plain, cloud, queue)
        async for wf in plain.list_workflows(f"TaskQueue = '{queue}' AND ExecutionStatus = 'Running'"):
            await plain.get_workflow_handle(wf.id).terminate("test finished")


def scheduled_activities(events: list[HistoryEvent], after: int = 0) -> int:
    return sum(
        1
        for e in events
        if e.event_id > after and e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    )


async def test_a_plain_client_cannot_start_a_workflow_the_worker_acts_on(setup: Setup) -> None:
    ref, change = setup.change("p-plain")
    workflow_id = await setup.start(setup.plain, ref, change)
    failure = await setup.task_failure(workflow_id)
    assert "payload is not encrypted" in json.dumps(failure)
    assert scheduled_activities(await setup.events(workflow_id)) == 0
    assert setup.cloud.calls == [] and setup.cloud.statuses == []
    # Control: the same request through osprov's client is acted on (the worker is alive and able).
    ref, change = setup.change("p-encrypted")
    await setup.start(setup.secure, ref, change)
    await eventually(lambda: bool(setup.cloud.statuses), "the encrypted start reconciled", 30)
    assert setup.cloud.calls


async def test_a_plain_signal_to_a_running_workflow_is_not_acted_on(setup: Setup) -> None:
    ref, change = setup.change("p-running")
    workflow_id = await setup.start(setup.secure, ref, change)
    await eventually(
        lambda: any(s["conditions"][0]["status"] == "True" for s in setup.cloud.statuses), "Ready", 30
    )

    # The project's object workflow reports to the Keystone sweep after its step: then it is quiet.
    async def reported() -> bool:
        try:
            _, located = await keystone_sweep.read_all(setup.secure, "keystone", setup.queue)
        except ApplicationError:  # the sweep has not started yet
            return False
        return bool(located)

    await eventually(reported, "the project's object reported to the sweep", 30)
    events = await setup.events(workflow_id)
    last = events[-1].event_id
    calls = list(setup.cloud.calls)
    statuses = len(setup.cloud.statuses)
    _, forged = setup.change("p-running", generation=2, description="written by a plain client")
    forged = forged.model_copy(update={"ref": ref})
    await setup.plain.get_workflow_handle(workflow_id).signal(SIGNAL_RESOURCE_CHANGED, forged)
    failure = await setup.task_failure(workflow_id, after=last)
    assert "payload is not encrypted" in json.dumps(failure)
    assert scheduled_activities(await setup.events(workflow_id), after=last) == 0
    assert setup.cloud.calls == calls and len(setup.cloud.statuses) == statuses
