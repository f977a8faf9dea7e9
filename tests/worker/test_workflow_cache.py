"""The worker's Temporal options from its settings: the workflow cache, workflow tasks at once, activity polls."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from temporalio.testing import WorkflowEnvironment

from osprov.runtime.settings import Settings
from osprov.worker.__main__ import build_worker
from tests.workflows.conftest import test_server_path as server_path


@pytest.mark.parametrize(
    ("variable", "value", "option"),
    [
        ("OSPROV_WORKFLOW_CACHE", 4321, "max_cached_workflows"),
        ("OSPROV_WORKFLOW_TASKS", 7, "max_concurrent_workflow_tasks"),
    ],
)
async def test_the_worker_takes_the_setting(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: int, option: str
) -> None:
    monkeypatch.setenv(variable, str(value))
    env = await WorkflowEnvironment.start_time_skipping(test_server_existing_path=server_path())
    try:
        with ThreadPoolExecutor(1) as executor:
            config: dict[str, Any] = dict(build_worker(env.client, Settings(), executor).config())
            assert config[option] == value
    finally:
        await env.shutdown()


def test_the_default_cache_holds_the_2000_resource_run_s_workflows(monkeypatch: pytest.MonkeyPatch) -> None:
    """P3's 4,067 live workflows all stay cached (Temporal's default 1,000 replayed the evicted ones: ~45 %
    more worker CPU per resource); 5,000 at ~0.11 MiB each fit the worker pod's 1.5 GiB (docs/benchmarks.md)."""
    monkeypatch.delenv("OSPROV_WORKFLOW_CACHE", raising=False)
    assert Settings().workflow_cache == 5000


def test_the_worker_runs_eight_workflow_tasks_at_once_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    """Temporal's 100 on one interpreter timed out hundreds of tasks under a backlog (docs/benchmarks.md)."""
    monkeypatch.delenv("OSPROV_WORKFLOW_TASKS", raising=False)
    assert Settings().workflow_tasks == 8


@pytest.mark.parametrize("threads", [2, 4, 8, 16])
async def test_activity_polls_leave_slots_for_eager_execution(
    monkeypatch: pytest.MonkeyPatch, threads: int
) -> None:
    """Each waiting poll holds an activity slot, and a worker with every slot held never asks for eager
    execution (Temporal's default 5 polls held all of 4 threads): a quarter of the slots poll, the rest
    stay free for the activities the worker's own workflow tasks schedule (deploy/temporal/dynamicconfig.yaml)."""
    monkeypatch.setenv("OSPROV_ACTIVITY_THREADS", str(threads))
    env = await WorkflowEnvironment.start_time_skipping(test_server_existing_path=server_path())
    try:
        with ThreadPoolExecutor(threads) as executor:  # as worker/__main__.py sizes it
            config: dict[str, Any] = dict(build_worker(env.client, Settings(), executor).config())
    finally:
        await env.shutdown()
    assert config["max_concurrent_activities"] == threads
    assert 1 <= config["max_concurrent_activity_task_polls"] < threads
    assert not config["disable_eager_activity_execution"]
