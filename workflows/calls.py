"""Running an activity from a workflow through its typed contract (osprov.api.activity): `call` for an
activity (scheduled through the task queue: its intent is in history first), `call_local` for a short,
idempotent one.

Workflow modules never import activity code (or its I/O libraries): they call `call(io.FIND, Find(...))`
and mypy checks the argument and the result against the contract the activity implements.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from datetime import timedelta
from typing import Any, TypeVar

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from osprov.api.activity import HEARTBEAT_SECONDS, Activity
    from osprov.api.errors import NON_RETRYABLE

In = TypeVar("In")
Out = TypeVar("Out")

# Transient failures (timeouts, 5xx, dropped connections) are retried here with backoff; everything
# typed as not retryable comes straight back to the workflow, which decides (condition + durable timer).
DEFAULT_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=20),
    maximum_attempts=5,
    non_retryable_error_types=sorted(NON_RETRYABLE),
)


# The default for workflows without a setting of their own (api/activity.py HEARTBEAT_SECONDS).
HEARTBEAT_TIMEOUT = timedelta(seconds=HEARTBEAT_SECONDS)


def run_heartbeat_timeout() -> timedelta | None:
    """The running workflow's heartbeat timeout: an Entity's comes from its EntityConfig (time-skipping
    tests turn it off: skipped server time outruns real heartbeats); any other workflow's is the default."""
    chosen: timedelta | None = getattr(workflow.instance(), "heartbeat_timeout", HEARTBEAT_TIMEOUT)
    return chosen


async def call(
    contract: Activity[In, Out],
    arg: In,
    *,
    summary: str,
    timeout: timedelta = timedelta(seconds=45),
    retry: RetryPolicy = DEFAULT_RETRY,
    heartbeat: timedelta | None = None,
) -> Out:
    """Run the activity `contract` names with `arg`; `summary` labels it in the Web UI's timeline."""
    result: Out = await workflow.execute_activity(
        contract.name,
        arg,
        result_type=contract.output,
        start_to_close_timeout=timeout,
        retry_policy=retry,
        heartbeat_timeout=heartbeat or run_heartbeat_timeout(),
        summary=summary,
    )
    return result


async def call_local(
    contract: Activity[In, Out],
    arg: In,
    *,
    summary: str,
    timeout: timedelta = timedelta(seconds=30),
    retry: RetryPolicy = DEFAULT_RETRY,
) -> Out:
    """Run a short, idempotent activity as a local activity: in the worker that runs the workflow task,
    recorded as one marker, with no task-queue round trip. Never for a destructive call: its intent would
    not be in history before the call is made (use `call`)."""
    result: Out = await workflow.execute_local_activity(
        contract.name,
        arg,
        result_type=contract.output,
        start_to_close_timeout=timeout,
        retry_policy=retry,
        summary=summary,
    )
    return result


async def together(*calls: Awaitable[Any]) -> list[Any]:
    """Run `calls` at once (their activities are scheduled in one activation, so one round instead of one
    per call) and return their results in order. A failed one fails the whole once every one has ended:
    none is left running behind the caller's retry."""
    results = await asyncio.gather(*calls, return_exceptions=True)
    failed = [r for r in results if isinstance(r, BaseException)]
    if failed:
        raise failed[0]
    return list(results)
