"""Patch markers (workflows/patches.py): a run started on this release records one, and the first step of a
new Keystone object is its only step. Old runs keep asking for each patch: tests/replay replays histories
recorded before the release marker existed."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path
from typing import Any

from temporalio.api.enums.v1 import EventType

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


def test_every_patch_the_workflows_ask_for_is_covered_by_the_release_marker() -> None:
    asked = _patch_ids_asked()
    assert len(asked) >= 25
    assert asked == patches.IN_RELEASE - {patches.RELEASE}, (
        sorted(asked - patches.IN_RELEASE),
        sorted(patches.IN_RELEASE - asked),
    )
