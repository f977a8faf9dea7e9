"""The worker's heartbeat (worker/interceptor.py) reaches a real Temporal server for threaded and async
activities alike.

Before: for a threaded activity the interceptor called `activity.heartbeat()` on the event loop, where
the SDK's threaded variant waits (up to 10 s) for that same loop to take the beat. The worker froze for
10 s once a call passed a second, the beat never left, and the heartbeat timeout failed the attempt.
"""

from __future__ import annotations

import asyncio
import sys
import time
import uuid
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path

import pytest_asyncio
from temporalio import activity, workflow
from temporalio.common import RetryPolicy
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from osprov.worker.interceptor import HEARTBEAT_EVERY_SECONDS, LogContextInterceptor

# Longer than two beats, and longer than the heartbeat timeout: only beats keep the attempt alive.
CALL_SECONDS = 3 * HEARTBEAT_EVERY_SECONDS
HEARTBEAT_TIMEOUT = timedelta(seconds=2 * HEARTBEAT_EVERY_SECONDS)


@activity.defn(name="slow_sync")
def slow_sync() -> str:
    time.sleep(CALL_SECONDS)  # the workload: a blocking cloud call that takes a while
    return "sync"


@activity.defn(name="slow_async")
async def slow_async() -> str:
    await asyncio.sleep(CALL_SECONDS)
    return "async"


@workflow.defn(name="SlowCalls", sandboxed=False)
class SlowCalls:
    @workflow.run
    async def run(self) -> list[str]:
        once = RetryPolicy(maximum_attempts=1)
        return list(
            await asyncio.gather(
                *(
                    workflow.execute_activity(
                        name,
                        start_to_close_timeout=timedelta(seconds=60),
                        heartbeat_timeout=HEARTBEAT_TIMEOUT,
                        retry_policy=once,
                    )
                    for name in ("slow_sync", "slow_async")
                )
            )
        )


@pytest_asyncio.fixture(scope="module")
async def server() -> AsyncIterator[WorkflowEnvironment]:
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=str(Path(sys.executable).parent / "temporal")
    )
    try:
        yield env
    finally:
        await env.shutdown()


async def test_a_long_threaded_and_a_long_async_call_both_outlive_their_heartbeat_timeout(
    server: WorkflowEnvironment,
) -> None:
    queue = f"hb-{uuid.uuid4()}"
    with ThreadPoolExecutor(max_workers=2) as executor:
        async with Worker(
            server.client,
            task_queue=queue,
            workflows=[SlowCalls],
            activities=[slow_sync, slow_async],
            activity_executor=executor,
            interceptors=[LogContextInterceptor()],
        ):
            result = await server.client.execute_workflow(SlowCalls.run, id=queue, task_queue=queue)
    # Each call ran once, to the end: its beats reached the server within the heartbeat timeout (before,
    # the threaded one's attempt failed with a heartbeat timeout while the loop was held).
    assert result == ["sync", "async"]
