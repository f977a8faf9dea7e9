"""The worker's /healthz: its Temporal pollers made progress, as the SDK reports them itself.

The Python SDK exposes no poll times in process (`Worker.is_running` only, and a fatal poller error
ends `Worker.run`, which ends this process). Its core records each poller's last successful poll (an
empty long-poll answer counts: the connection works) and sends it with the worker heartbeat
(`Runtime(worker_heartbeat_interval=…)`, OSPROV_WORKER_HEARTBEAT_SECONDS) to the server, where
ListWorkers/DescribeWorker return it. This module reads our own heartbeat back and fails liveness when
the workflow or the activity poller had no successful poll within the window: a worker whose connection
is stuck or whose polls keep failing gets restarted. The times are the worker's own clock, compared
with the same clock. A server without worker heartbeats (namespace capability) leaves only
`is_running`, and the report says so.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta

from google.protobuf.timestamp_pb2 import Timestamp
from temporalio.api.worker.v1 import WorkerHeartbeat
from temporalio.api.workflowservice.v1 import (
    DescribeNamespaceRequest,
    DescribeWorkerRequest,
    ListWorkersRequest,
)
from temporalio.client import Client
from temporalio.service import RPCError

from osprov.runtime import logs
from osprov.runtime.health import Report

log = logs.log("osprov.worker.health")
POLLERS = ("workflow", "activity")
RPC_TIMEOUT = timedelta(seconds=10)


def _epoch(ts: Timestamp) -> float:
    return ts.seconds + ts.nanos / 1e9


@dataclass
class PollerView:
    """What the last heartbeat said (epoch seconds, the worker's clock); None: no successful poll yet."""

    supported: bool | None = None  # the namespace accepts worker heartbeats (None: not asked yet)
    last_poll: dict[str, float | None] = field(default_factory=lambda: dict.fromkeys(POLLERS))
    error: str | None = None  # the last refresh's failure, if it failed


def assess(view: PollerView, running: bool, started: float, now: float, window_s: float) -> Report:
    """Pure: alive when the worker runs and each poller succeeded within the window (a poller that has
    not succeeded yet is judged from the worker's start: the first window is the start-up grace)."""
    problems = [] if running else ["the worker is not running"]
    ages: dict[str, float | None] = {}
    if view.supported is not False:
        for poller, at in view.last_poll.items():
            ages[poller] = None if at is None else round(now - at, 1)
            age = now - (at if at is not None else started)
            if age > window_s:
                problems.append(f"no successful {poller} task poll for {age:.0f}s")
    details: dict[str, object] = {
        "problems": problems,
        "last_poll_age_s": ages if view.supported is not False else "not reported by this Temporal server",
    }
    if view.error:
        details["refresh_error"] = view.error
    return Report(ok=not problems, details=details)


class PollerHealth:
    def __init__(
        self,
        client: Client,
        task_queue: str,
        window_s: float,
        running: Callable[[], bool],
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.client, self.task_queue, self.window_s = client, task_queue, window_s
        self.running, self.clock = running, clock
        self.started = clock()
        self.view = PollerView()

    def live(self) -> Report:
        return assess(self.view, self.running(), self.started, self.clock(), self.window_s)

    async def _supported(self) -> bool:
        resp = await self.client.workflow_service.describe_namespace(
            DescribeNamespaceRequest(namespace=self.client.namespace), timeout=RPC_TIMEOUT
        )
        return bool(resp.namespace_info.capabilities.worker_heartbeats)

    async def _own_heartbeat(self) -> WorkerHeartbeat | None:
        """This process's latest heartbeat for the task queue (identity = the client's: pid@host)."""
        service, ns = self.client.workflow_service, self.client.namespace
        query = f"WorkerIdentity = '{self.client.identity}' AND TaskQueue = '{self.task_queue}'"
        listed = await service.list_workers(
            ListWorkersRequest(namespace=ns, query=query), timeout=RPC_TIMEOUT
        )
        beats = []
        for worker in listed.workers:
            info = await service.describe_worker(
                DescribeWorkerRequest(namespace=ns, worker_instance_key=worker.worker_instance_key),
                timeout=RPC_TIMEOUT,
            )
            beats.append(info.worker_info.worker_heartbeat)
        return max(beats, key=lambda b: _epoch(b.heartbeat_time), default=None)

    async def refresh(self) -> None:
        try:
            if self.view.supported is None:
                self.view.supported = await self._supported()
            if not self.view.supported:
                return
            beat = await self._own_heartbeat()
        except RPCError as err:
            self.view.error = f"{err.status.name}: {err.message}"
            return
        self.view.error = None
        if beat is None:
            return
        for poller, info in (
            ("workflow", beat.workflow_poller_info),
            ("activity", beat.activity_poller_info),
        ):
            if info.HasField("last_successful_poll_time"):
                self.view.last_poll[poller] = _epoch(info.last_successful_poll_time)

    async def run(self, interval_s: float) -> None:
        while True:
            try:
                await self.refresh()
            except Exception:  # a bug here must not end the refreshes silently (liveness would fail later)
                log.exception("worker health refresh failed")
            await asyncio.sleep(interval_s)  # the heartbeat's own period: nothing new comes faster
