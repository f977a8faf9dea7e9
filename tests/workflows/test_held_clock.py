"""The failure the workflow tests rerun (conftest.HELD_CLOCK) is what the SDK raises when a skip of server
time cannot finish: here an activity that does not end holds the clock, as a stranded run does."""

from __future__ import annotations

import asyncio
import re
import uuid
from datetime import timedelta

import pytest
from temporalio import activity, workflow
from temporalio.service import RPCError, RPCStatusCode
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from tests.workflows.conftest import HELD_CLOCK

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
