"""Determinism guard: every workflow type replays its recorded history with the current code."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from osprov.api import ownership as own
from osprov.workflows.all import WORKFLOWS

HISTORIES = Path(__file__).parent / "histories"


def test_every_workflow_type_has_a_recorded_history() -> None:
    recorded = {p.stem for p in HISTORIES.glob("*.json")}
    types = {wf.__temporal_workflow_definition.name for wf in WORKFLOWS}  # type: ignore[attr-defined]
    assert types <= recorded, (
        f"record histories for {sorted(types - recorded)}: python -m tests.replay.record"
    )


# histories/*.json: recorded from the current code on the time-skipping server (python -m
# tests.replay.record), which has no custom search attributes, so they carry no upserts. histories/v0.1/:
# the same scenarios recorded by release 0.1 (before the Keystone objects' own workflows): runs started
# then must still replay. histories/local-stack/: exported from workflows that ran on the local stack
# with the production config (upserts on), started by older code and continued by newer code (temporal
# workflow show -o json, payloads decoded by the codec server).
RECORDED = ["*.json", "v0.1/*.json", "local-stack/*.json"]


# Histories recorded with a limit lowered so the scenario stays small (tests/replay/scenarios.py): they
# replay with the same limit, as a worker replays with the constants its run was recorded with.
RECORDED_WITH = {"KeystoneObject-rolls-without-step": (own, "MAX_HISTORY_PER_RUN", 30)}


@pytest.mark.parametrize(
    "path",
    [p for pattern in RECORDED for p in sorted(HISTORIES.glob(pattern))],
    ids=lambda p: str(p.relative_to(HISTORIES).with_suffix("")),
)
async def test_history_replays(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if path.stem in RECORDED_WITH:
        monkeypatch.setattr(*RECORDED_WITH[path.stem])
    text = await asyncio.to_thread(path.read_text)
    history = WorkflowHistory.from_json(f"replay-{path.stem}", text)
    replayer = Replayer(workflows=WORKFLOWS, data_converter=pydantic_data_converter)
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is None, f"{path.stem}: {result.replay_failure}"
