"""A run started by release 0.1 (Keystone written directly, no ownership record) continues on this code.

Worker A plays the old release: its Domain workflow is this one with the ownership path switched off,
so it issues 0.1's commands (workflows/keystone/legacy.py) and records no patch marker. Worker B is the
current code: it must replay A's history without a non-determinism error and take the ownership path at
its first live pass — not at the next continue-as-new.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from temporalio import workflow
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

with workflow.unsafe.imports_passed_through():  # the sandbox re-imports this module for DomainRelease01
    from osprov.api import keystone_io as io
    from osprov.api.messages import EntityInput, ResourceChange, parse_workflow_id
    from osprov.workflows import patches
    from osprov.workflows.all import WORKFLOWS
    from osprov.workflows.keystone.domain import DomainWorkflow
    from tests.workflows.fakes import FakeCloud
    from tests.workflows.harness import CONFIG, Harness, eventually


@workflow.defn(name="Domain")
class DomainRelease01(DomainWorkflow):
    @workflow.run
    async def run(self, inp: EntityInput) -> str:
        return await self.run_loop(inp)

    def ownership(self) -> bool:  # 0.1 had no ownership path and called no patch
        return False


async def test_a_running_0_1_workflow_switches_to_claims_at_its_next_live_pass(
    tenv: WorkflowEnvironment, monkeypatch: pytest.MonkeyPatch
) -> None:
    cloud, queue = FakeCloud(), f"q-{uuid.uuid4()}"
    h = Harness(tenv, cloud, queue)
    old = [DomainRelease01 if w is DomainWorkflow else w for w in WORKFLOWS]
    # Nor did it know the release marker (workflows/patches.py): A asks for each patch by itself.
    monkeypatch.setattr(patches, "RELEASES", ())
    # Worker A keeps no cache, so no sticky queue of it outlives it: B's first task replays all of A's history.
    async with Worker(
        tenv.client, task_queue=queue, workflows=old, activities=cloud.activities(), max_cached_workflows=0
    ):
        wf = await h.apply("Domain", {"name": "d", "description": "first"}, config=CONFIG, code_generation=0)
        await eventually(lambda: bool(cloud.statuses), "0.1 created the domain")
        assert cloud.count(io.CREATE.name) == 1 and not cloud.object_workflows
    monkeypatch.undo()
    # Worker B caches as production does: with no cache, every task evicted the run while its local
    # activities (claims, status writes) were still in flight, and on a loaded machine (CI) the run never
    # got past them.
    async with Worker(tenv.client, task_queue=queue, workflows=WORKFLOWS, activities=cloud.activities()):
        ref = parse_workflow_id(wf.id)
        assert ref is not None
        await h.send(wf, ResourceChange(ref=ref, generation=2, spec={"name": "d", "description": "second"}))
        await eventually(
            lambda: h.written[wf.id]["observedGeneration"] == 2, "generation 2 on the new code", 30
        )
        state: Any = (await h.state(wf)).kind
        assert state["upgraded"] is True and cloud.object_workflows  # claimed through the object's workflow
        # The record begins now: 0.1 kept no ownership record, so the domain counts as found (read-only).
        cond = h.written[wf.id]["conditions"][0]
        assert cond["reason"] == "Adopted" and "description" in cond["message"]
        assert cloud.of("domain")[0].fields["description"] == "first"
        await h.close()
