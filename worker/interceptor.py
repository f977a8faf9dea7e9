"""Every activity: the resource and workflow ID bound to its log lines, and its outcome counted."""

from __future__ import annotations

import time
from typing import Any

import structlog
from temporalio import activity
from temporalio.exceptions import ApplicationError
from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput, Interceptor

from osprov.api import metrics as names


def resource_of(workflow_id: str) -> dict[str, str]:
    parts = workflow_id.split("/")
    if len(parts) != 4:
        return {}
    return {"kind": parts[0], "namespace": parts[1], "name": parts[2]}


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
            try:
                return await self.next.execute_activity(input)
            except ApplicationError as err:
                outcome = err.type or "error"
                raise
            except BaseException:
                outcome = "error"
                raise
            finally:
                meter.create_counter(names.CLOUD_CALLS, "activities by name and outcome").add(
                    1, {"activity": info.activity_type, "outcome": outcome}
                )
                meter.create_histogram_float(names.CLOUD_CALL_SECONDS, "activity duration", "s").record(
                    time.monotonic() - started, {"activity": info.activity_type}
                )


class LogContextInterceptor(Interceptor):
    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _BindContext(next)
