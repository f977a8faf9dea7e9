"""osprov's metrics reach the runtime's Prometheus endpoint: reconciles by kind/result, cloud calls."""

from __future__ import annotations

import asyncio
import urllib.request
import uuid

from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from osprov.api.messages import SIGNAL_RESOURCE_CHANGED, EntityInput, ResourceChange, ResourceRef
from osprov.runtime import metrics
from osprov.worker.interceptor import LogContextInterceptor
from osprov.workflows.all import WORKFLOWS
from tests.support.health import free_port
from tests.workflows.conftest import test_server_path as server_path
from tests.workflows.fakes import FakeCloud
from tests.workflows.harness import CONFIG, eventually


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
        return resp.read().decode()


async def test_reconciles_and_cloud_calls_are_exported() -> None:
    port = free_port()
    runtime = metrics.runtime(port, host="127.0.0.1")
    env = await WorkflowEnvironment.start_time_skipping(
        data_converter=pydantic_data_converter, test_server_existing_path=server_path(), runtime=runtime
    )
    try:
        cloud = FakeCloud()
        queue = f"m-{uuid.uuid4()}"
        ref = ResourceRef(kind="Domain", namespace="ns", name="m", uid=str(uuid.uuid4()))
        async with Worker(
            env.client,
            task_queue=queue,
            workflows=WORKFLOWS,
            activities=cloud.activities(),
            interceptors=[LogContextInterceptor()],
        ):
            handle = await env.client.start_workflow(
                "Domain",
                EntityInput(ref=ref, config=CONFIG),
                id=ref.workflow_id,
                task_queue=queue,
                start_signal=SIGNAL_RESOURCE_CHANGED,
                start_signal_args=[ResourceChange(ref=ref, generation=1, spec={"name": "d"})],
            )
            await eventually(lambda: bool(cloud.statuses), "reconciled")

            def exported() -> bool:
                text = scrape(port)
                return (
                    "osprov_reconciles{" in text
                    and 'kind="Domain"' in text
                    and 'result="ok"' in text
                    and 'activity="keystone.find"' in text
                    and 'outcome="ok"' in text
                )

            await eventually(lambda: asyncio.to_thread(exported), "metrics exported", 15)
            await handle.terminate("done")
    finally:
        await env.shutdown()
