"""Record one history per workflow type into tests/replay/histories/ (run after a deliberate change).

python -m tests.replay.record [KIND ...]   # all kinds, or only those named
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from tests.replay.scenarios import SCENARIOS
from tests.workflows.conftest import test_server_path
from tests.workflows.harness import harness

OUT = Path(__file__).parent / "histories"


async def main(kinds: list[str]) -> None:
    env = await WorkflowEnvironment.start_time_skipping(
        data_converter=pydantic_data_converter, test_server_existing_path=test_server_path()
    )
    try:
        for kind, scenario in SCENARIOS.items():
            if kinds and kind not in kinds:
                continue
            async for h in harness(env):
                workflow_id = await scenario(h, kind)
                history = await env.client.get_workflow_handle(workflow_id).fetch_history()
                path = OUT / f"{kind}.json"
                path.write_text(json.dumps(json.loads(history.to_json()), indent=1) + "\n")
                print(f"recorded {path} ({len(history.events)} events)")
    finally:
        await env.shutdown()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
