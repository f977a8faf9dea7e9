"""Drives production workflows on the time-skipping server against stubbed activities."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from temporalio.client import WorkflowHandle
from temporalio.common import WorkflowIDReusePolicy
from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from osprov.activities import keystone_sweep
from osprov.api import ownership as own
from osprov.api import releases, sweep
from osprov.api.messages import (
    QUERY_STATE,
    SIGNAL_RESOURCE_CHANGED,
    EntityConfig,
    EntityInput,
    EntityState,
    ResourceChange,
    ResourceRef,
)
from osprov.workflows.all import WORKFLOWS
from tests.workflows import runstate
from tests.workflows.fakes import FakeCloud

# A timer due this soon (server seconds) fires before a test signals the run (see runstate).
TIMER_GUARD_S = 2.0

# No heartbeat timeout: the stubs do not heartbeat, and skipped server time would outrun real heartbeats.
CONFIG = EntityConfig(
    resync_seconds=600, backoff_initial_seconds=5, upsert_search_attributes=False, heartbeat_seconds=None
)


async def eventually(
    check: Callable[[], Awaitable[bool] | bool], what: str, deadline_s: float = 30.0
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
        self.keystone = CONFIG.keystone_name  # objects' workflows are per controller: this task queue
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
        queue: str | None = None,
        code_generation: int | None = None,
        **extra: Any,
    ) -> WorkflowHandle[Any, Any]:
        """Start a resource's workflow with its first change, as the bridge does; `queue`: another task
        queue (one no worker serves yet, so the signals sent before a worker starts arrive in one first
        workflow task); `code_generation`: the releases the starter knew (default: this code's, as the
        bridge stamps; 0: a run started before generations)."""
        ref = ResourceRef(kind=kind, namespace="ns", name=name, uid=uid or str(uuid.uuid4()))
        change = ResourceChange(ref=ref, generation=generation, spec=spec, **extra)
        handle = await self.env.client.start_workflow(
            kind,
            EntityInput(
                ref=ref,
                config=config,
                generation=releases.GENERATION if code_generation is None else code_generation,
            ),
            id=ref.workflow_id,
            task_queue=queue or self.queue,
            start_signal=SIGNAL_RESOURCE_CHANGED,
            start_signal_args=[change],
        )
        self.started.append(handle)
        return handle

    async def until(
        self, check: Callable[[], bool], what: str, virtual_s: int = 300, real_s: float = 60.0
    ) -> None:
        """Advance workflow time a second at a time until `check` holds (deadline in virtual and real time)."""
        end = time.monotonic() + real_s
        for _ in range(virtual_s):
            if check():
                return
            await asyncio.sleep(0.02)  # let the worker run what is due before time moves again
            if check():
                return
            await self.env.sleep(1)
            if time.monotonic() > end:
                break
        raise AssertionError(f"timed out waiting for: {what}")

    async def sleep_settled(self, seconds: float) -> None:
        """Skip server time once every run of the test has settled: a status is seen before the task that
        wrote it closes, and a skip into that open task can fire a timer it cancels, which strands the run
        with the server's clock held (runstate)."""
        for workflow_id in self._workflow_ids():
            await runstate.settle(self.env, workflow_id)
        await self.env.sleep(seconds)

    def object_workflow(self, key: own.ObjectKey) -> str:
        """The ID of the one Keystone object workflow started for `key`."""
        (workflow_id,) = [w for w in self.cloud.object_workflows if w.endswith(key.path)]
        return workflow_id

    def _workflow_ids(self) -> list[str]:
        return [h.id for h in self.started] + sorted(self.cloud.object_workflows)

    async def close(self) -> None:
        """Terminate what is still running, so no orphaned timer holds the module's test-server clock.

        Only a settled run: a run terminated with an activity in flight holds the clock (runstate). And
        until no run is new: a run settling here can start another (a sweep shard's wake starts the lead
        sweep), which a list taken once missed. Left running, its timer fired in a later test's skip, its
        workflow task waited on a queue no worker polls any more, and that held the clock for good."""
        closed: set[str] = set()
        while fresh := [w for w in self._workflow_ids() if w not in closed]:
            for workflow_id in fresh:
                if not (await runstate.settle(self.env, workflow_id, deadline_s=60)).closed:
                    await self.env.client.get_workflow_handle(workflow_id).terminate("test finished")
                closed.add(workflow_id)

    async def signal(
        self, handle: WorkflowHandle[Any, Any], generation: int, spec: dict[str, Any], **extra: Any
    ) -> None:
        ref = (await self.state(handle)).ref
        await self.send(handle, ResourceChange(ref=ref, generation=generation, spec=spec, **extra))

    async def send(
        self, handle: WorkflowHandle[Any, Any], arg: Any, signal: str = SIGNAL_RESOURCE_CHANGED
    ) -> None:
        """Signal a settled run whose next timer is not about to fire (runstate: a test-server bug)."""
        await runstate.quiet_timers(self.env, handle.id, TIMER_GUARD_S)
        await handle.signal(signal, arg)

    async def deliver_held(self) -> None:
        """Deliver the claims the fake held back (FakeCloud.hold_claims), as the claim activity would have."""
        while self.cloud.held:
            claim = self.cloud.held.pop(0)
            workflow_id = claim.key.workflow_id(claim.keystone, self.queue)
            self.cloud.object_workflows.add(workflow_id)
            await self.env.client.start_workflow(
                own.WORKFLOW_TYPE,
                own.ObjectInput(keystone=claim.keystone, key=claim.key, generation=releases.GENERATION),
                id=workflow_id,
                task_queue=self.queue,
                start_signal=own.SIGNAL_CLAIM,
                start_signal_args=[claim],
                id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
            )

    async def state(self, handle: WorkflowHandle[Any, Any]) -> EntityState:
        return await handle.query(QUERY_STATE, result_type=EntityState)

    async def swept(self) -> int:
        """How many objects' reports the Keystone sweep holds, in its shards and its own table, as its scan
        reads them (0 before it started)."""
        lead = sweep.workflow_id(self.keystone, self.queue)
        try:
            state = await self.env.client.get_workflow_handle(lead).query(
                sweep.QUERY_SWEPT, result_type=sweep.SweepState
            )
        except RPCError:
            return 0
        shards = [sweep.shard_workflow_id(self.keystone, self.queue, n) for n in state.shards]
        located, _ = await keystone_sweep.read_reports(
            self.env.client, sweep.Scan(sweep_workflow_id=lead, shards=shards)
        )
        return len(located)

    @property
    def written(self) -> dict[str, dict[str, Any]]:
        """Each started resource's status as the API holds it now, by workflow ID."""
        by_uid = self.cloud.status_by_uid
        return {
            h.id: by_uid[h.id.rsplit("/", 1)[1]] for h in self.started if h.id.rsplit("/", 1)[1] in by_uid
        }

    def ready_of(self, handle: WorkflowHandle[Any, Any]) -> dict[str, Any]:
        """The Ready condition one started resource's status holds now ({} before its first status)."""
        return self.written.get(handle.id, {}).get("conditions", [{}])[0]  # type: ignore[no-any-return]

    def last_ready(self) -> dict[str, Any]:
        assert self.cloud.statuses, "no status written"
        return self.cloud.statuses[-1]["conditions"][0]  # type: ignore[no-any-return]


async def skip(env: WorkflowEnvironment, seconds: float, step: float = 600.0) -> None:
    """Advance server time by `seconds` in steps: one sleep of hours, while a loop continues-as-new many
    times, can outlast the test server's request handling on a loaded machine (an http2 error)."""
    left = seconds
    while left > 0:
        await env.sleep(min(step, left))
        left -= step


async def harness(tenv: WorkflowEnvironment) -> AsyncIterator[Harness]:
    cloud = FakeCloud()
    queue = f"q-{uuid.uuid4()}"
    async with Worker(tenv.client, task_queue=queue, workflows=WORKFLOWS, activities=cloud.activities()):
        hs = Harness(tenv, cloud, queue)
        yield hs
        await hs.close()
