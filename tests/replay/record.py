"""Record one history per workflow type into tests/replay/histories/ (run after a deliberate change).

python -m tests.replay.record [KIND ...]                  # all kinds, or only those named
python -m tests.replay.record --suffix NAME [KIND ...]    # as <Kind>-NAME.json, beside the old ones

After a patched change (workflow.patched), record with a suffix: the old history keeps proving that runs
started before the change still replay, the new one proves the patched path does.
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


async def main(kinds: list[str], suffix: str = "") -> None:
    env = await WorkflowEnvironment.start_time_skipping(
        data_converter=pydantic_data_converter, test_server_existing_path=test_server_path()
    )
    try:
        for kind, scenario in SCENARIOS.items():
            if kinds and kind not in kinds:
                continue
            async for h in harness(env):
                # "<workflow ID>" (its latest run) or "<workflow ID>@<run ID>" (a run that continued as new)
                workflow_id, _, run_id = (await scenario(h, kind)).partition("@")
                handle = env.client.get_workflow_handle(workflow_id, run_id=run_id or None)
                history = await handle.fetch_history()
                path = OUT / f"{kind}{'-' + suffix if suffix else ''}.json"
                path.write_text(json.dumps(json.loads(history.to_json()), indent=1) + "\n")
                print(f"recorded {path} ({len(history.events)} events)")
    finally:
        await env.shutdown()


if __name__ == "__main__":
    args = sys.argv[1:]
    suffix = ""
    if args[:1] == ["--suffix"]:
        suffix, args = args[1], args[2:]
    asyncio.run(main(args, suffix))
