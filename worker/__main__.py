"""`osprov worker`: runs every kind's workflow and every activity on one task queue.

Sync activities (openstacksdk, kubernetes) run in a bounded thread pool sized for the machine;
SIGTERM drains: in-flight activities get a grace period, workflows resume on another worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import temporalio.activity
import temporalio.workflow
from temporalio.client import Client
from temporalio.service import RPCError
from temporalio.worker import Worker

from osprov.runtime import health as health_server
from osprov.runtime import logs
from osprov.runtime.codec import CodecConfigError
from osprov.runtime.settings import Settings
from osprov.runtime.temporal import TransportConfigError, connect
from osprov.worker import schedules
from osprov.worker.health import PollerHealth
from osprov.worker.interceptor import LogContextInterceptor
from osprov.worker.runner import workflow_runner


def build_worker(client: Client, settings: Settings, executor: ThreadPoolExecutor) -> Worker:
    from osprov.activities.all import ACTIVITIES
    from osprov.workflows.all import WORKFLOWS

    return Worker(
        client,
        task_queue=settings.task_queue,
        workflows=WORKFLOWS,
        activities=ACTIVITIES,
        activity_executor=executor,
        max_concurrent_activities=settings.activity_threads,
        max_concurrent_activity_task_polls=activity_polls(settings.activity_threads),
        max_cached_workflows=settings.workflow_cache,
        max_concurrent_workflow_tasks=settings.workflow_tasks,
        interceptors=[LogContextInterceptor()],
        graceful_shutdown_timeout=timedelta(seconds=20),
        # A workflow's next task goes to the worker that has it cached; if that worker died, the task moves
        # to the shared queue after this (the default 10 s would dominate recovery from a kill -9).
        sticky_queue_schedule_to_start_timeout=timedelta(seconds=2),
        workflow_runner=workflow_runner(settings.workflow_runner, client.data_converter),
    )


def activity_polls(threads: int) -> int:
    """Long polls for activity tasks. Each waiting poll holds one of the `threads` activity slots, and
    Temporal's default of 5 held all of a 4-thread worker's: with no slot free, the worker never asked for
    eager execution (an activity its own workflow task schedules handed back in that task's completion,
    instead of a trip through matching; docs/benchmarks.md). A quarter of the slots keeps polling for the
    activities eager execution does not bring (retries, other workers' workflows) and leaves the rest free."""
    return max(1, threads // 4)


async def run(settings: Settings) -> int:
    log = logs.log("osprov.worker")
    try:
        # Logs whether payloads are encrypted and with which key ID; with keys, the codec rejects every
        # payload it did not encrypt, so a plain client's workflow task fails before any activity runs.
        client = await connect(settings)
    except (CodecConfigError, TransportConfigError) as err:
        log.error("worker refuses to start", error=str(err))  # the messages name variables, never values
        return 2
    try:
        await schedules.ensure(client, settings)  # the region inventory (docs/inventory.md), if configured
    except RPCError as err:
        log.error("worker refuses to start: cannot create the inventory schedules", error=str(err))
        return 2
    with ThreadPoolExecutor(max_workers=settings.activity_threads, thread_name_prefix="activity") as executor:
        worker = build_worker(client, settings, executor)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        log.info("worker started", task_queue=settings.task_queue, temporal=settings.temporal_address)
        async with worker:
            async with _health(settings, client, worker):
                await stop.wait()
            log.info("worker stopping: draining in-flight activities")
    log.info("worker stopped")
    return 0


@contextlib.asynccontextmanager
async def _health(settings: Settings, client: Client, worker: Worker) -> AsyncIterator[None]:
    """/healthz and /readyz on OSPROV_HEALTH_PORT: the worker runs and its pollers make progress."""
    if not settings.health_port:
        yield
        return
    health = PollerHealth(
        client, settings.task_queue, settings.progress_window_seconds, running=lambda: worker.is_running
    )
    refresher = asyncio.create_task(health.run(min(settings.worker_heartbeat_seconds, 30.0)))
    runner = await health_server.serve(settings.health_port, health.live, health.live)
    try:
        yield
    finally:
        refresher.cancel()
        await runner.cleanup()


def main(argv: list[str] | None = None) -> int:
    settings = Settings()
    logs.configure(settings.log_level, component="worker")
    # The workflow/activity info goes into structured fields (osprov.runtime.logs), not into the message text.
    temporalio.workflow.logger.workflow_info_on_message = False
    temporalio.activity.logger.activity_info_on_message = False
    return asyncio.run(run(settings))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
