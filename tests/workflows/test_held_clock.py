"""The failure the workflow tests rerun (conftest.HELD_CLOCK) is what the SDK raises when a skip of server
time cannot finish: here an activity that does not end holds the clock, as a stranded run does. And the
harness closes every run a test started, so that none of them holds the clock of the module's next tests."""

from __future__ import annotations

import asyncio
import re
import uuid
from datetime import timedelta

import pytest
from temporalio import activity, workflow
from temporalio.client import WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from tests.workflows import runstate
from tests.workflows.conftest import HELD_CLOCK
from tests.workflows.fakes import FakeCloud
from tests.workflows.harness import Harness

released = asyncio.Event()


@activity.defn
async def held() -> None:
    await released.wait()


@workflow.defn(sandboxed=False)
class HoldsTheClock:
    @workflow.run
    async def run(self) -> None:
        await workflow.execute_activity(held, start_to_close_timeout=timedelta(hours=1))
        await workflow.sleep(600)


def rerun_matches(error: BaseException) -> bool:
    """pytest-rerunfailures' own test of an `only_rerun` pattern."""
    return re.search(HELD_CLOCK, f"{type(error).__name__}: {error}") is not None


async def test_a_skip_into_a_held_clock_fails_with_the_error_the_tests_rerun(
    tenv: WorkflowEnvironment,
) -> None:
    queue = f"q-{uuid.uuid4()}"
    released.clear()
    async with Worker(tenv.client, task_queue=queue, workflows=[HoldsTheClock], activities=[held]):
        handle = await tenv.client.start_workflow(HoldsTheClock.run, id=queue, task_queue=queue)
        try:
            with pytest.raises(RPCError) as failed:
                await tenv.sleep(1200)  # the SDK's 30 s for a test-service call runs out
        finally:
            released.set()
            await handle.terminate("test finished")
    assert failed.value.status == RPCStatusCode.CANCELLED
    assert rerun_matches(failed.value), str(failed.value)


@pytest.mark.parametrize("message", ["Timeout expired", "h2 protocol error: http2 error"])
def test_both_ends_of_the_deadline_race_are_rerun(message: str) -> None:
    # The client's timer and the server's deadline (a reset stream with CANCEL) race to end the same call.
    assert rerun_matches(RPCError(message, RPCStatusCode.CANCELLED, b""))


@pytest.mark.parametrize("message", ["Timeout expired after a retry", "h2 protocol error: stream reset"])
def test_nothing_else_is_rerun(message: str) -> None:
    assert not rerun_matches(RPCError(message, RPCStatusCode.CANCELLED, b""))


@workflow.defn(sandboxed=False)
class Waits:
    @workflow.run
    async def run(self) -> None:
        await workflow.sleep(600)


async def test_a_run_started_while_the_harness_closes_is_closed_too(
    tenv: WorkflowEnvironment, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run that settles while the harness closes can start another (a sweep shard's wake starts the lead
    sweep). Left running, that one's timer fires in a later test's skip of server time, its workflow task
    waits on a queue no worker polls any more, and the clock is held for good: the held-clock failures of
    test_ownership.py's two-users test. close() therefore goes on until no run it knows is new."""
    cloud, queue = FakeCloud(), f"q-{uuid.uuid4()}"
    first, late = f"{queue}-first", f"{queue}-late"
    settle = runstate.settle

    async def settle_then_start_another(
        env: WorkflowEnvironment, workflow_id: str, deadline_s: float = 30.0
    ) -> runstate.RunState:
        state = await settle(env, workflow_id, deadline_s)
        if workflow_id == first and late not in cloud.object_workflows:
            await tenv.client.start_workflow(Waits.run, id=late, task_queue=queue)
            cloud.object_workflows.add(late)
        return state

    async with Worker(tenv.client, task_queue=queue, workflows=[Waits]):
        await tenv.client.start_workflow(Waits.run, id=first, task_queue=queue)
        cloud.object_workflows.add(first)
        monkeypatch.setattr(runstate, "settle", settle_then_start_another)
        await Harness(tenv, cloud, queue).close()
        statuses = [(await tenv.client.get_workflow_handle(w).describe()).status for w in (first, late)]
    assert statuses == [WorkflowExecutionStatus.TERMINATED] * 2
