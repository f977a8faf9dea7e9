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


def test_the_default_holds_the_live_workflows_of_thousands_of_resources(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Temporal's own default (1,000) is fewer than 500 Keystone resources' workflows."""
    monkeypatch.delenv("OSPROV_WORKFLOW_CACHE", raising=False)
    assert Settings().workflow_cache == 10000
