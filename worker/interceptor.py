"""Every activity: the resource and workflow ID bound to its log lines, its outcome counted, and a
heartbeat while it runs (so the workflow's heartbeat timeout, not its start-to-close timeout, decides how
soon a step that died with its worker is retried elsewhere: seconds, not 45 s)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import structlog
from temporalio import activity
from temporalio.exceptions import ApplicationError
from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput, Interceptor

from osprov.api import metrics as names
from osprov.api.messages import parse_workflow_id

# Well inside the workflows' heartbeat timeout (osprov.workflows.calls.HEARTBEAT_TIMEOUT).
HEARTBEAT_EVERY_SECONDS = 1.0


def resource_of(workflow_id: str) -> dict[str, str]:
    ref = parse_workflow_id(workflow_id)
    return {"kind": ref.kind, "namespace": ref.namespace, "name": ref.name} if ref else {}


async def _heartbeat(threaded: bool) -> None:
    while True:  # the first beat after a second: most calls are done by then and need none
        await asyncio.sleep(HEARTBEAT_EVERY_SECONDS)
        if threaded:
            # A threaded activity's heartbeat() hands the beat to this event loop and blocks until the
            # loop has taken it (up to 10 s): called on the loop itself, it froze the whole worker for
            # 10 s and the beat never left. From a thread (the context is copied), the loop takes it.
            await asyncio.to_thread(activity.heartbeat)
        else:
            activity.heartbeat()


class _BindContext(ActivityInboundInterceptor):
    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        info = activity.info()
        meter = activity.metric_meter()
        started = time.monotonic()
        outcome = "ok"
        with structlog.contextvars.bound_contextvars(
            workflow_id=info.workflow_id,
            activity=info.activity_type,
            attempt=info.attempt,
            **resource_of(info.workflow_id or ""),
        ):
            threaded = input.executor is not None  # the SDK runs a sync activity on its executor
            beating = None if info.is_local else asyncio.create_task(_heartbeat(threaded))
            try:
                return await self.next.execute_activity(input)
            except ApplicationError as err:
                outcome = err.type or "error"
                raise
            except BaseException:
                outcome = "error"
                raise
            finally:
                if beating is not None:
                    beating.cancel()
                meter.create_counter(names.CLOUD_CALLS, "activities by name and outcome").add(
                    1, {"activity": info.activity_type, "outcome": outcome}
                )
                meter.create_histogram_float(names.CLOUD_CALL_SECONDS, "activity duration", "s").record(
                    time.monotonic() - started, {"activity": info.activity_type}
                )


class LogContextInterceptor(Interceptor):
    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _BindContext(next)
