"""Drives production workflows on the time-skipping server against stubbed activities."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from temporalio.client import WorkflowHandle
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from api.messages import (
    QUERY_STATE,
    SIGNAL_RESOURCE_CHANGED,
    EntityConfig,
    EntityInput,
    EntityState,
    ResourceChange,
    ResourceRef,
)
from tests.workflows.fakes import FakeCloud
from workflows.all import WORKFLOWS

CONFIG = EntityConfig(resync_seconds=600, backoff_initial_seconds=5, upsert_search_attributes=False)


async def eventually(
    check: Callable[[], Awaitable[bool] | bool], what: str, deadline_s: float = 10.0
) -> None:
    """Wait on a condition with a deadline (never a bare sleep)."""
    end = time.monotonic() + deadline_s
    while True:
        result = check()
        if isinstance(result, Awaitable):
            result = await result
        if result:
            return
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for: {what}")
        await asyncio.sleep(0.05)


class Harness:
    def __init__(self, env: WorkflowEnvironment, cloud: FakeCloud, queue: str) -> None:
        self.env, self.cloud, self.queue = env, cloud, queue
        self.started: list[WorkflowHandle[Any, Any]] = []

    async def apply(
        self,
        kind: str,
        spec: dict[str, Any],
        generation: int = 1,
        *,
        name: str = "r",
        uid: str | None = None,
        config: EntityConfig = CONFIG,
        **extra: Any,
    ) -> WorkflowHandle[Any, Any]:
        ref = ResourceRef(kind=kind, namespace="ns", name=name, uid=uid or str(uuid.uuid4()))
        change = ResourceChange(ref=ref, generation=generation, spec=spec, **extra)
        handle = await self.env.client.start_workflow(
            kind,
            EntityInput(ref=ref, config=config),
            id=ref.workflow_id,
            task_queue=self.queue,
            start_signal=SIGNAL_RESOURCE_CHANGED,
            start_signal_args=[change],
        )
        self.started.append(handle)
        return handle

    async def close(self) -> None:
        """Terminate what is still running, so no orphaned timer holds the shared test server's clock."""
        for handle in self.started:
            desc = await self.env.client.get_workflow_handle(handle.id).describe()
            if desc.status is not None and desc.status.name == "RUNNING":
                await self.env.client.get_workflow_handle(handle.id).terminate("test finished")

    async def signal(
        self, handle: WorkflowHandle[Any, Any], generation: int, spec: dict[str, Any], **extra: Any
    ) -> None:
        ref = (await self.state(handle)).ref
        await handle.signal(
            SIGNAL_RESOURCE_CHANGED, ResourceChange(ref=ref, generation=generation, spec=spec, **extra)
        )

    async def state(self, handle: WorkflowHandle[Any, Any]) -> EntityState:
        return await handle.query(QUERY_STATE, result_type=EntityState)

    def last_ready(self) -> dict[str, Any]:
        assert self.cloud.statuses, "no status written"
        return self.cloud.statuses[-1]["conditions"][0]  # type: ignore[no-any-return]


async def harness(tenv: WorkflowEnvironment) -> AsyncIterator[Harness]:
    cloud = FakeCloud()
    queue = f"q-{uuid.uuid4()}"
    async with Worker(tenv.client, task_queue=queue, workflows=WORKFLOWS, activities=cloud.activities()):
        hs = Harness(tenv, cloud, queue)
        yield hs
        await hs.close()
