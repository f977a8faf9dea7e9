"""OSPROV_WORKFLOW_CACHE reaches the Temporal worker (an evicted workflow replays its whole history)."""

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
