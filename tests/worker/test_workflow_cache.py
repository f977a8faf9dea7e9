"""OSPROV_WORKFLOW_CACHE and OSPROV_WORKFLOW_TASKS reach the Temporal worker (an evicted workflow replays its whole history)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from temporalio.testing import WorkflowEnvironment

from osprov.runtime.settings import Settings
from osprov.worker.__main__ import build_worker
from tests.workflows.conftest import test_server_path as server_path


async def test_the_worker_keeps_as_many_workflows_cached_as_the_setting_says(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OSPROV_WORKFLOW_CACHE", "4321")
    env = await WorkflowEnvironment.start_time_skipping(test_server_existing_path=server_path())
    try:
        with ThreadPoolExecutor(1) as executor:
            worker = build_worker(env.client, Settings(), executor)
            assert worker.config()["max_cached_workflows"] == 4321
    finally:
        await env.shutdown()


def test_the_default_is_temporals_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """1,000 cached workflows (~0.19 MiB each, P3) fit the worker pod's 1 GiB memory limit."""
    monkeypatch.delenv("OSPROV_WORKFLOW_CACHE", raising=False)
    assert Settings().workflow_cache == 1000


async def test_the_worker_runs_as_many_workflow_tasks_at_once_as_the_setting_says(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OSPROV_WORKFLOW_TASKS", "7")
    env = await WorkflowEnvironment.start_time_skipping(test_server_existing_path=server_path())
    try:
        with ThreadPoolExecutor(1) as executor:
            worker = build_worker(env.client, Settings(), executor)
            assert worker.config()["max_concurrent_workflow_tasks"] == 7
    finally:
        await env.shutdown()


def test_the_worker_runs_eight_workflow_tasks_at_once_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    """Temporal's 100 on one interpreter timed out hundreds of tasks under a backlog (docs/benchmarks.md)."""
    monkeypatch.delenv("OSPROV_WORKFLOW_TASKS", raising=False)
    assert Settings().workflow_tasks == 8
