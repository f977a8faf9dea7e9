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
from osprov.api import releases
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


async def test_a_new_run_records_no_patch_marker(h: Harness) -> None:
    """Stamped with this code's generation (the bridge, the claim activity), neither the Project's run nor
    its object's asks for a marker. Before generations each recorded its release's (two events each)."""
    h.cloud.add("domain", name="service", enabled=True)
    wf = await h.apply("Project", {"name": "p1", "domain": "service"})
    await eventually(lambda: bool(h.written.get(wf.id)), "the Project's status")
    assert h.written[wf.id]["conditions"][0]["status"] == "True"
    key = ObjectKey(kind="project", domain="service", name="p1")
    object_id = h.object_workflow(key)

    for workflow_id in (wf.id, object_id):
        assert await patch_markers(h, workflow_id) == [], workflow_id


async def test_a_run_started_before_generations_records_the_release_marker_and_no_other_patch(
    h: Harness,
) -> None:
    h.cloud.add("domain", name="service", enabled=True)
    wf = await h.apply("Project", {"name": "p1", "domain": "service"}, code_generation=0)
    await eventually(lambda: bool(h.written.get(wf.id)), "the Project's status")
    markers = await patch_markers(h, wf.id)
    # Before release markers: keystone-ownership, keystone-sweep, kube-writes-local, k8s-events.
    assert len(markers) == 1 and patches.RELEASE in markers[0], markers


def test_the_generation_stamped_by_the_bridge_and_activities_is_the_releases_the_workflows_know() -> None:
    assert releases.GENERATION == patches.known() == len(patches.RELEASES)


async def test_a_new_objects_first_step_is_its_only_step(h: Harness) -> None:
    """The domain's answer to the project's watch ends the step's wait; before, it also marked the object
    dirty, and a second step read the project again by ID right after creating it."""
    h.cloud.add("domain", name="service", enabled=True)
    wf = await h.apply("Project", {"name": "p1", "domain": "service"})
    await eventually(lambda: bool(h.written.get(wf.id)), "the Project's status")
    assert h.written[wf.id]["conditions"][0]["status"] == "True"
    key = ObjectKey(kind="project", domain="service", name="p1")
    object_id = h.object_workflow(key)
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


async def _run_on_release_a(
    tenv: WorkflowEnvironment, monkeypatch: pytest.MonkeyPatch, run: Any, *args: Any
) -> Any:
    """The history of `run` (TwoReleases' or StampedTwoReleases') executed by release A's code."""
    monkeypatch.setattr(patches, "RELEASES", (RELEASE_A,))
    monkeypatch.setattr(patches, "patched", _without_b(patches.patched))
    queue = f"q-{uuid.uuid4()}"
    async with Worker(tenv.client, task_queue=queue, workflows=[TwoReleases, StampedTwoReleases]):
        handle = await tenv.client.start_workflow(run, *args, id=queue, task_queue=queue)
        await handle.result()
    monkeypatch.undo()
    return await handle.fetch_history()


async def _history_of_a_run_on_release_a(tenv: WorkflowEnvironment, monkeypatch: pytest.MonkeyPatch) -> Any:
    history = await _run_on_release_a(tenv, monkeypatch, TwoReleases.run)
    markers = _markers(history)
    assert len(markers) == 1 and "release-a" in markers[0], markers
    return history


def _markers(history: Any) -> list[str]:
    return [
        e.marker_recorded_event_attributes.details["patch-data"].payloads[0].data.decode()
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_MARKER_RECORDED
    ]


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


# Generations (workflows/patches.py): the same two releases, the run stamped by its starter.
@workflow.defn(sandboxed=False)
class StampedTwoReleases:
    @workflow.run
    async def run(self, generation: int) -> None:
        patches.begin_run(generation)
        await TwoReleases().run()


async def _stamped_run_on_release_a(tenv: WorkflowEnvironment, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Stamped by release A's code: generation 1."""
    return await _run_on_release_a(tenv, monkeypatch, StampedTwoReleases.run, 1)


async def test_a_stamped_run_records_no_marker_and_replays_after_the_next_release(
    tenv: WorkflowEnvironment, monkeypatch: pytest.MonkeyPatch
) -> None:
    history = await _stamped_run_on_release_a(tenv, monkeypatch)
    assert _markers(history) == []  # release A's "a" taken without asking: its starter knew release A
    monkeypatch.setattr(patches, "RELEASES", (RELEASE_A, ("release-b", frozenset({"b"}))))
    await Replayer(workflows=[StampedTwoReleases]).replay_workflow(history)


async def test_a_generation_taken_from_the_code_instead_of_the_input_would_break_that_run(
    tenv: WorkflowEnvironment, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Why the generation rides on the input: the worker's own count would take release B's "b" too."""
    history = await _stamped_run_on_release_a(tenv, monkeypatch)
    monkeypatch.setattr(patches, "RELEASES", (RELEASE_A, ("release-b", frozenset({"b"}))))
    monkeypatch.setattr(patches, "run_generation", patches.known)
    with pytest.raises(NondeterminismError):
        await Replayer(workflows=[StampedTwoReleases]).replay_workflow(history)


async def test_a_stamped_run_a_worker_from_before_generations_ran_still_replays(
    tenv: WorkflowEnvironment, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rollout of generations: a worker without them ignores an EntityInput's generation (ObjectInput
    forbids unknown fields, so such a worker refuses those) and records its release marker. The new code
    replays that run without asking: Temporal lets a recorded patch marker go unasked."""
    monkeypatch.setattr(patches, "begin_run", lambda generation: None)
    history = await _stamped_run_on_release_a(tenv, monkeypatch)
    assert len(_markers(history)) == 1 and "release-a" in _markers(history)[0]
    monkeypatch.setattr(patches, "RELEASES", (RELEASE_A,))
    await Replayer(workflows=[StampedTwoReleases]).replay_workflow(history)


async def test_a_run_stamped_by_newer_code_waits_for_a_worker_that_knows_its_releases(
    tenv: WorkflowEnvironment, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker on release A refuses a run stamped with two releases: its workflow task fails (no timer,
    no marker, nothing decided), and a worker on release B runs it."""
    monkeypatch.setattr(patches, "RELEASES", (RELEASE_A,))
    queue = f"q-{uuid.uuid4()}"
    async with Worker(tenv.client, task_queue=queue, workflows=[StampedTwoReleases]):
        handle = await tenv.client.start_workflow(StampedTwoReleases.run, 2, id=queue, task_queue=queue)

        async def refused() -> bool:
            events = (await handle.fetch_history()).events
            return any(e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED for e in events)

        await eventually(refused, "the old worker's failed workflow task")
        history = await handle.fetch_history()
        (failed,) = [e for e in history.events if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED]
        assert (
            "knows 2 releases and this worker knows 1"
            in failed.workflow_task_failed_event_attributes.failure.message
        )
        assert not any(e.event_type == EventType.EVENT_TYPE_TIMER_STARTED for e in history.events)
    monkeypatch.setattr(patches, "RELEASES", (RELEASE_A, ("release-b", frozenset({"b"}))))
    async with Worker(tenv.client, task_queue=queue, workflows=[StampedTwoReleases]):
        await handle.result()
    history = await handle.fetch_history()
    assert _markers(history) == []
    timers = [e for e in history.events if e.event_type == EventType.EVENT_TYPE_TIMER_STARTED]
    assert len(timers) == 2  # "a" and "b" both taken
