"""Patch markers (workflows/patches.py): a run started on this release records one, and the first step of a
new Keystone object is its only step. Old runs keep asking for each patch: tests/replay replays histories
recorded before the release marker existed."""

from __future__ import annotations

import ast
import importlib
import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio import workflow
from temporalio.api.enums.v1 import EventType
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer, Worker
from temporalio.workflow import NondeterminismError

from osprov.api import keystone_io as io
from osprov.api.ownership import ObjectKey
from osprov.workflows import patches
from tests.workflows.harness import Harness, eventually

WORKFLOWS = Path(__file__).resolve().parents[2] / "workflows"


async def patch_markers(h: Harness, workflow_id: str) -> list[str]:
    history = await h.env.client.get_workflow_handle(workflow_id).fetch_history()
    return [
        e.marker_recorded_event_attributes.details["patch-data"].payloads[0].data.decode()
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_MARKER_RECORDED
        and e.marker_recorded_event_attributes.marker_name == "core_patch"
    ]


async def test_a_new_run_records_the_release_marker_and_no_other_patch(h: Harness) -> None:
    h.cloud.add("domain", name="service", enabled=True)
    wf = await h.apply("Project", {"name": "p1", "domain": "service"})
    await eventually(lambda: bool(h.written.get(wf.id)), "the Project's status")
    key = ObjectKey(kind="project", domain="service", name="p1")
    (object_id,) = [w for w in h.cloud.object_workflows if w.endswith(key.path)]

    for workflow_id in (wf.id, object_id):
        markers = await patch_markers(h, workflow_id)
        # Before: keystone-ownership, keystone-sweep, kube-writes-local, k8s-events (two events each).
        assert len(markers) == 1 and patches.RELEASE in markers[0], (workflow_id, markers)


async def test_a_new_objects_first_step_is_its_only_step(h: Harness) -> None:
    """The domain's answer to the project's watch ends the step's wait; before, it also marked the object
    dirty, and a second step read the project again by ID right after creating it."""
    h.cloud.add("domain", name="service", enabled=True)
    wf = await h.apply("Project", {"name": "p1", "domain": "service"})
    await eventually(lambda: bool(h.written.get(wf.id)), "the Project's status")
    assert h.written[wf.id]["conditions"][0]["status"] == "True"
    key = ObjectKey(kind="project", domain="service", name="p1")
    (object_id,) = [w for w in h.cloud.object_workflows if w.endswith(key.path)]
    state: Any = await h.env.client.get_workflow_handle(object_id).query("object")
    assert state["passes"] == 1
    finds = h.cloud.count(io.FIND.name)
    assert finds == 2, h.cloud.calls  # the domain's lookup and the project's, no read by ID after the create


def _patch_ids_asked() -> set[str]:
    """Every patch ID the workflow modules pass to patches.patched (constants resolved in their module)."""
    asked: set[str] = set()
    for path in WORKFLOWS.rglob("*.py"):
        if path.name == "patches.py":
            continue
        tree = ast.parse(path.read_text())
        module = None
        for node in ast.walk(tree):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "patched"
                and isinstance(node.func.value, ast.Name)
            ):
                continue
            arg = node.args[0]
            if node.func.value.id == "workflow":
                assert isinstance(arg, ast.JoinedStr), (
                    f"{path}:{node.lineno}: ask patches.patched, not workflow.patched (one marker per release)"
                )
                continue
            if isinstance(arg, ast.Constant):
                asked.add(str(arg.value))
                continue
            if module is None:
                rel = path.relative_to(WORKFLOWS.parent).with_suffix("")
                module = importlib.import_module("osprov." + ".".join(rel.parts))
            expr = ast.unparse(arg)
            value: Any = module
            for part in expr.split("."):
                value = getattr(value, part)
            asked.add(value)
    return asked


def test_every_patch_the_workflows_ask_for_is_covered_by_a_release_marker() -> None:
    asked = _patch_ids_asked()
    covered = frozenset().union(*(patches for _, patches in patches.RELEASES))
    assert len(asked) >= 25
    assert asked == covered, (sorted(asked - covered), sorted(covered - asked))
    markers = [marker for marker, _ in patches.RELEASES]
    assert len(set(markers)) == len(markers) and not set(markers) & covered


# A release after this one, played by a tiny workflow: release A changed "a" (a 1 s timer where there was
# none), release B changes "b" (a 2 s timer). The workflow reads the module's RELEASES at each call, so a
# monkeypatch switches releases between recording and replay.
@workflow.defn(sandboxed=False)
class TwoReleases:
    @workflow.run
    async def run(self) -> None:
        if patches.patched("a"):
            await workflow.sleep(1)
        if patches.patched("b"):
            await workflow.sleep(2)


RELEASE_A = ("release-a", frozenset({"a"}))


async def _history_of_a_run_on_release_a(tenv: WorkflowEnvironment, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setattr(patches, "RELEASES", (RELEASE_A,))
    monkeypatch.setattr(patches, "patched", _without_b(patches.patched))
    queue = f"q-{uuid.uuid4()}"
    async with Worker(tenv.client, task_queue=queue, workflows=[TwoReleases]):
        handle = await tenv.client.start_workflow(TwoReleases.run, id=queue, task_queue=queue)
        await handle.result()
    monkeypatch.undo()
    history = await handle.fetch_history()
    markers = [
        e.marker_recorded_event_attributes.details["patch-data"].payloads[0].data.decode()
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_MARKER_RECORDED
    ]
    assert len(markers) == 1 and "release-a" in markers[0], markers
    return history


def _without_b(patched: Any) -> Any:
    """Release A's code did not ask for "b" at all."""
    return lambda patch_id: False if patch_id == "b" else patched(patch_id)


async def test_a_run_of_one_release_replays_after_the_next_appends_its_marker(
    tenv: WorkflowEnvironment, monkeypatch: pytest.MonkeyPatch
) -> None:
    history = await _history_of_a_run_on_release_a(tenv, monkeypatch)
    monkeypatch.setattr(patches, "RELEASES", (RELEASE_A, ("release-b", frozenset({"b"}))))
    await Replayer(workflows=[TwoReleases]).replay_workflow(history)


async def test_renaming_the_marker_instead_would_break_that_run(
    tenv: WorkflowEnvironment, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rule the module docstring states, shown failing: one marker renamed to cover both releases."""
    history = await _history_of_a_run_on_release_a(tenv, monkeypatch)
    monkeypatch.setattr(patches, "RELEASES", (("release-b", frozenset({"a", "b"})),))
    with pytest.raises(NondeterminismError):
        await Replayer(workflows=[TwoReleases]).replay_workflow(history)
