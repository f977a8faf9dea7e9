"""The worker's /healthz follows its Temporal pollers: a worker cut off from Temporal (its connection
black-holed, the process alive and /metrics still answering) fails liveness, and passes again once its
pollers succeed. The evidence is the SDK core's own last-successful-poll time, read back from Temporal."""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devenv.config import PORTS
from devenv.faults.proxy import Fault, FaultProxy
from devenv.testing import StackEnv
from tests.support.health import free_port
from tests.support.health import probe as healthz
from tests.support.osprov import Proc
from tests.support.waiting import wait_for

pytestmark = pytest.mark.stack

# > the local stack's 10 s long poll (devenv/temporal.py): an idle worker's last successful poll is at most
# ~12 s old while Temporal answers.
WINDOW_S = 25


@pytest.fixture(scope="module")
def temporal_proxy() -> Iterator[FaultProxy]:
    with FaultProxy("127.0.0.1", PORTS.temporal) as proxy:
        yield proxy


@pytest.fixture(scope="module")
def worker(
    identity_stack: StackEnv, temporal_proxy: FaultProxy, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Proc, int]]:
    port = free_port()
    env = (
        dict(os.environ)
        | identity_stack.env
        | {
            "OSPROV_TEMPORAL_ADDRESS": f"127.0.0.1:{temporal_proxy.port}",
            "OSPROV_TASK_QUEUE": f"osprov-health-{uuid.uuid4().hex[:8]}",
            "OSPROV_HEALTH_PORT": str(port),
            "OSPROV_PROGRESS_WINDOW_SECONDS": str(WINDOW_S),
            "OSPROV_WORKER_HEARTBEAT_SECONDS": "2",
        }
    )
    tmp: Path = tmp_path_factory.mktemp("worker-health")
    proc = Proc("worker", [sys.executable, "-m", "osprov.worker"], env, tmp / "worker.log")
    proc.start()
    try:
        yield proc, port
    finally:
        proc.stop()


def polled(port: int) -> dict[str, Any] | None:
    """The body of a passing /healthz that reports a real poll time for both pollers."""
    status, body = healthz(port)
    ages = body.get("last_poll_age_s")
    return body if status == 200 and isinstance(ages, dict) and None not in ages.values() else None


def failing(port: int) -> dict[str, Any] | None:
    status, body = healthz(port)
    return body if status == 503 else None


def test_liveness_follows_the_pollers(worker: tuple[Proc, int], temporal_proxy: FaultProxy) -> None:
    proc, port = worker
    # Both pollers' first long poll ends within seconds (empty answers count: the connection works).
    body = wait_for(lambda: polled(port), "both pollers reported a successful poll", 150)
    assert body["problems"] == []

    temporal_proxy.set_fault(Fault.HANG, drop_existing=True)
    body = wait_for(lambda: failing(port), "liveness failed while Temporal is unreachable", WINDOW_S + 90)
    assert proc.popen is not None and proc.popen.poll() is None, "the process itself is still running"
    assert any("task poll for" in p for p in body["problems"]), body

    temporal_proxy.set_fault(Fault.PASS)
    wait_for(lambda: healthz(port)[0] == 200, "liveness back once the pollers succeed again", 150)
