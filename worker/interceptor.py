"""Binds the resource (kind, namespace, name) and workflow ID to every log line an activity writes."""

from __future__ import annotations

from typing import Any

import structlog
from temporalio import activity
from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput, Interceptor


def resource_of(workflow_id: str) -> dict[str, str]:
    parts = workflow_id.split("/")
    if len(parts) != 4:
        return {}
    return {"kind": parts[0], "namespace": parts[1], "name": parts[2]}


class _BindContext(ActivityInboundInterceptor):
    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        info = activity.info()
        with structlog.contextvars.bound_contextvars(
            workflow_id=info.workflow_id,
            activity=info.activity_type,
            attempt=info.attempt,
            **resource_of(info.workflow_id or ""),
        ):
            return await self.next.execute_activity(input)


class LogContextInterceptor(Interceptor):
    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _BindContext(next)
