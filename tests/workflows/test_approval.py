"""Approval gates (workflows/approval.py) on the time-skipping server with a stubbed Nova: a gated
destructive step waits for an approval of exactly that change, and nothing is called on the cloud until
then."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from temporalio.client import WorkflowHandle, WorkflowUpdateFailedError
from temporalio.testing import WorkflowEnvironment

from osprov.api import nova_io as io
from osprov.api.operations import APPROVE, UPDATE_APPROVE
from tests.workflows.fakes import FakeCloud
from tests.workflows.fakes_nova import nova_harness
from tests.workflows.test_server_workflow import NEW, OLD, ServerHarness, spec

FINALIZER = "nova.osh.openstack.org/finalizer"


@pytest_asyncio.fixture
async def h(tenv: WorkflowEnvironment) -> AsyncIterator[ServerHarness]:
    async with nova_harness(tenv, FakeCloud(), f"q-{uuid.uuid4()}") as hs:
        yield hs
        await hs.close()


def manual(image: str = OLD) -> dict[str, Any]:
    return spec(image, approvalPolicy="manual")


async def ready(h: ServerHarness, server_spec: dict[str, Any], **extra: Any) -> WorkflowHandle[Any, Any]:
    wf = await h.apply("Server", server_spec, **extra)
    await h.until(lambda: h.condition().get("status") == "True", "server available")
    return wf


def awaiting(h: ServerHarness, token: str) -> bool:
    c = h.condition()
    return c.get("reason") == "AwaitingApproval" and f"{APPROVE}={token}" in c.get("message", "")


async def test_gated_rebuild_waits_for_its_generation_then_runs_once(h: ServerHarness) -> None:
    wf = await ready(h, manual())  # creating is not destructive: no approval asked
    await h.signal(wf, 2, manual(NEW))
    await h.until(lambda: awaiting(h, "rebuild:2"), "the rebuild awaits approval of generation 2")
    assert "AwaitingApproval" in h.cloud.reasons((await h.state(wf)).ref.uid)  # an Event says so too
    # An approval of an older generation (or another action) approves nothing.
    await h.signal(wf, 2, manual(NEW), annotations={APPROVE: "rebuild:1"})
    await h.signal(wf, 2, manual(NEW), annotations={APPROVE: "delete:2"})
    await h.env.sleep(120)
    assert h.nova.submits == [] and ((await h.state(wf)).kind or {})["rebuild"] is None  # not armed
    assert awaiting(h, "rebuild:2")
    await h.signal(wf, 2, manual(NEW), annotations={APPROVE: "rebuild:2"})
    await h.until(lambda: h.nova.submits == [NEW], "the approved rebuild is submitted")
    h.nova.only().settle()
    await h.until(lambda: h.condition().get("status") == "True", "settled")
    await h.env.sleep(120)
    assert h.nova.submits == [NEW] and h.nova.accepted == [NEW]  # once


async def test_osprov_approve_is_an_update_that_accepts_only_the_pending_change(h: ServerHarness) -> None:
    wf = await ready(h, manual())
    with pytest.raises(WorkflowUpdateFailedError):  # nothing pending yet
        await wf.execute_update(UPDATE_APPROVE, "rebuild:2", result_type=str)
    await h.signal(wf, 2, manual(NEW))
    await h.until(lambda: awaiting(h, "rebuild:2"), "awaiting approval")
    with pytest.raises(WorkflowUpdateFailedError):  # an older generation
        await wf.execute_update(UPDATE_APPROVE, "rebuild:1", result_type=str)
    assert h.nova.submits == []
    answer = await wf.execute_update(UPDATE_APPROVE, "rebuild:2", result_type=str)
    assert answer.startswith("approved: rebuilding server")
    await h.until(lambda: h.nova.submits == [NEW], "submitted once approved")


async def test_a_new_generation_needs_a_new_approval(h: ServerHarness) -> None:
    wf = await ready(h, manual())
    await h.signal(wf, 2, manual(NEW))
    await h.until(lambda: awaiting(h, "rebuild:2"), "awaiting approval of generation 2")
    await wf.execute_update(UPDATE_APPROVE, "rebuild:2", result_type=str)
    await h.until(lambda: h.nova.submits == [NEW], "generation 2 rebuilt")
    h.nova.only().settle()
    await h.until(lambda: h.condition().get("status") == "True", "settled")
    await h.signal(wf, 3, manual("img-newer"), annotations={APPROVE: "rebuild:2"})  # the old approval stays
    await h.until(lambda: awaiting(h, "rebuild:3"), "generation 3 awaits its own approval")
    assert h.nova.submits == [NEW]


async def test_the_operators_namespace_gate_holds_a_deletion_the_spec_did_not_ask_to_gate(
    h: ServerHarness,
) -> None:
    wf = await ready(h, spec(), gated=True)  # spec.approvalPolicy is automatic: the operator's gate wins
    deleting: dict[str, Any] = {"deleting": True, "finalizers": [FINALIZER], "gated": True}
    await h.signal(wf, 2, spec(), **deleting)
    await h.until(lambda: awaiting(h, "delete:2"), "the deletion awaits approval")
    await h.env.sleep(120)
    assert h.nova.count(io.DELETE_SERVER.name) == 0 and h.cloud.finalizers.count(FINALIZER) == 1
    await h.signal(wf, 2, spec(), annotations={APPROVE: "delete:2"}, **deleting)
    assert await wf.result() == "deleted"
    assert h.nova.count(io.DELETE_SERVER.name) == 1


async def test_gated_resize_arms_nothing_until_its_flavor_is_approved(h: ServerHarness) -> None:
    wf = await ready(h, manual())
    await h.signal(wf, 2, manual() | {"flavor": "m1.small"})
    await h.until(lambda: awaiting(h, "resize:2"), "the resize awaits approval of generation 2")
    await h.env.sleep(120)
    assert h.nova.resizes == [] and ((await h.state(wf)).kind or {})["resize"] is None  # not armed
    await h.signal(wf, 2, manual() | {"flavor": "m1.small"}, annotations={APPROVE: "resize:2"})
    await h.until(lambda: h.nova.resizes == ["m1.small"], "the approved resize is submitted once")
