"""Histories encrypted by an earlier codec format still replay with the current codec.

histories/encrypted-v1/Project.json was recorded by the format-1 codec (no associated data, no
`encryption-format` metadata; osprov before the key-ID binding) on the time-skipping server, with the
key below: a Project whose first lookup fails (an encrypted failure in history), then converges and
is deleted. A worker that can no longer read it would fail every running workflow after an upgrade.
"""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path

from temporalio.client import WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from osprov.runtime.codec import FORMAT, KEY_ID, AesGcmCodec, parse_keys
from osprov.runtime.temporal import data_converter
from osprov.worker.runner import workflow_runner
from osprov.workflows.all import WORKFLOWS

V1_HISTORY = Path(__file__).parent / "histories" / "encrypted-v1" / "Project.json"
V1_KEY = base64.b64encode(b"v" * 32).decode()  # a test key, only ever used for this recording


async def history() -> WorkflowHistory:
    return WorkflowHistory.from_json("encrypted-v1", await asyncio.to_thread(V1_HISTORY.read_text))


async def test_a_format_1_history_replays_with_the_current_codec() -> None:
    h = await history()
    encrypted = [
        p
        for e in h.events
        if e.HasField("activity_task_completed_event_attributes")
        for p in e.activity_task_completed_event_attributes.result.payloads
    ]
    assert encrypted and all(p.metadata[KEY_ID] == b"v1key" and FORMAT not in p.metadata for p in encrypted)
    assert any(e.HasField("activity_task_failed_event_attributes") for e in h.events)
    # A rotated configuration: a newer active key, the old one kept for reading.
    codec = AesGcmCodec(parse_keys(f"v1key:{V1_KEY},v2key:{base64.b64encode(b'w' * 32).decode()}"), "v2key")
    converter = data_converter(codec)
    # Under Temporal's sandbox runner, and the worker's (worker/runner.py: contexts asked of no sandbox).
    for runner in (SandboxedWorkflowRunner(), workflow_runner("passthrough", converter)):
        replayer = Replayer(workflows=WORKFLOWS, data_converter=converter, workflow_runner=runner)
        result = await replayer.replay_workflow(h, raise_on_replay_failure=False)
        assert result.replay_failure is None, result.replay_failure


async def test_the_recording_is_really_encrypted() -> None:
    """Without the codec the same history does not replay: the replay above exercised decryption."""
    replayer = Replayer(workflows=WORKFLOWS, data_converter=pydantic_data_converter)
    result = await replayer.replay_workflow(await history(), raise_on_replay_failure=False)
    assert result.replay_failure is not None
