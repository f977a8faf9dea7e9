"""Typed activity calls by name, so workflow modules never import activity code (or its I/O libs)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, TypeVar

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from osprov.api.errors import NON_RETRYABLE  # pure: type names only

T = TypeVar("T")

# Transient failures (timeouts, 5xx, dropped connections) are retried here with backoff; everything
# typed as not retryable comes straight back to the workflow, which decides (condition + durable timer).
DEFAULT_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=20),
    maximum_attempts=5,
    non_retryable_error_types=sorted(NON_RETRYABLE),
)


async def call(
    name: str,
    arg: Any,
    result_type: type[T] | None = None,
    *,
    summary: str | None = None,
    timeout: timedelta = timedelta(seconds=45),
    retry: RetryPolicy = DEFAULT_RETRY,
    heartbeat: timedelta | None = None,
) -> T:
    """Run activity `name` and return its result as `result_type`."""
    return await workflow.execute_activity(  # type: ignore[no-any-return]
        name,
        arg,
        result_type=result_type,
        start_to_close_timeout=timeout,
        retry_policy=retry,
        heartbeat_timeout=heartbeat,
        summary=summary,
    )
