"""Plan preview (workflows/plan.py) on the time-skipping server with a stubbed Octavia: the Update `plan`
walks the kind's own decisions on fresh reads, writes nothing, and names exactly the call the workflow
then makes."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest_asyncio
from temporalio.testing import WorkflowEnvironment

from osprov.api import cinder_io, keystone_io, nova_io
from osprov.api import octavia_io as io
from osprov.api.operations import PLAN
from osprov.api.plan import UPDATE_PLAN, Plan
from osprov.workflows.plan import AFTER_WRITE
from tests.workflows.fakes import FakeCloud
from tests.workflows.fakes_cinder import CinderHarness, cinder_harness
from tests.workflows.fakes_nova import nova_harness
from tests.workflows.harness import Harness, eventually
from tests.workflows.test_loadbalancer import FINALIZER, HTTP, Env, load_balancer_env, with_listeners
from tests.workflows.test_server_workflow import NEW, OLD, ServerHarness
from tests.workflows.test_server_workflow import spec as server_spec


@pytest_asyncio.fixture
async def env(tenv: WorkflowEnvironment) -> AsyncIterator[Env]:
    async for e in load_balancer_env(tenv):
        yield e


MEMBERS = [{"address": "10.0.0.12", "port": 8080}, {"address": "10.0.0.13", "port": 8080}]


def member_change() -> dict[str, Any]:
    return with_listeners(HTTP | {"pool": {"proxyProtocolV2": True, "members": MEMBERS}})


async def test_plan_of_a_member_change_is_the_batch_update_the_workflow_then_makes(env: Env) -> None:
    wf = await env.apply(with_listeners(HTTP))
    await env.wait_reason("Provisioned")
    writes = env.o.mutations()
    plan = await wf.execute_update(UPDATE_PLAN, member_change(), result_type=Plan)
    assert env.o.mutations() == writes  # the plan wrote nothing
    [call] = plan.calls
    pool = env.o.named(env.o.pools, env.name("http", "pool"))
    assert (call.rule, call.activity) == ("P7c", io.REPLACE_MEMBERS.name)
    assert call.request == {"pool_id": pool.id, "members": MEMBERS}
    assert plan.then == AFTER_WRITE and [r[:3] for r in plan.reads] == ["R0:"]  # one read, as a pass
    assert env.status()["observedGeneration"] == 1  # nothing was applied
    await env.h.signal(wf, 2, member_change(), finalizers=[FINALIZER])
    await env.wait_reason("Provisioned", generation=2)
    [sent] = env.o.replaced[-1:]
    assert sent.model_dump(mode="json", exclude={"scope"}) == call.request  # exactly the planned call


async def test_plan_of_a_converged_spec_calls_nothing_and_an_invalid_one_says_why(env: Env) -> None:
    wf = await env.apply(with_listeners(HTTP))
    await env.wait_reason("Provisioned")
    plan = await wf.execute_update(UPDATE_PLAN, None, result_type=Plan)
    assert plan.calls == [] and plan.then.startswith("P8: converged")
    bad = await wf.execute_update(UPDATE_PLAN, {"listeners": "nope"}, result_type=Plan)
    assert bad.calls == [] and bad.then.startswith("invalid spec, nothing would be called")


async def test_the_plan_annotation_records_the_plan_of_a_paused_change_as_an_event(env: Env) -> None:
    wf = await env.apply(with_listeners(HTTP))
    await env.wait_reason("Provisioned")
    writes = env.o.mutations()
    paused = {"osprov.osh.openstack.org/paused": "true", PLAN: "1"}
    await env.h.signal(wf, 2, member_change(), finalizers=[FINALIZER], annotations=paused)
    await eventually(lambda: "Planned" in env.h.cloud.reasons(env.uid), "the Planned Event")
    [planned] = [e.event.note for e in env.h.cloud.events if e.event.reason == "Planned"]
    assert "P7c: replace the members of pool" in planned and "10.0.0.13" in planned
    assert env.o.mutations() == writes  # paused: planned, not applied


@pytest_asyncio.fixture
async def vh(tenv: WorkflowEnvironment) -> AsyncIterator[CinderHarness]:
    async for hs in cinder_harness(tenv):
        yield hs


async def test_volume_plan_names_the_metadata_update_C5_and_nothing_once_converged(vh: CinderHarness) -> None:
    vh.cinder.add_project()
    volume = {"project": {"name": "p", "domain": "Default"}, "size": 2, "tags": {"team": "a"}}
    wf = await vh.apply("Volume", volume, name="data")
    await vh.until(lambda: vh.condition().get("reason") == "Provisioned", "volume provisioned")
    calls = list(vh.cinder.calls)
    plan = await wf.execute_update(UPDATE_PLAN, volume | {"tags": {"team": "b"}}, result_type=Plan)
    [call] = plan.calls
    assert (call.rule, call.activity) == ("C5", cinder_io.UPDATE_METADATA.name)
    assert call.request["tags"] == {"team": "b"} and plan.then == AFTER_WRITE
    same = await wf.execute_update(UPDATE_PLAN, None, result_type=Plan)
    assert same.calls == [] and same.then.startswith("S1:")
    grown = await wf.execute_update(UPDATE_PLAN, volume | {"size": 3}, result_type=Plan)
    [extend] = grown.calls
    assert (extend.rule, extend.activity, extend.request["size"]) == ("C6", cinder_io.EXTEND_VOLUME.name, 3)
    assert [c for c in vh.cinder.calls[len(calls) :] if c != cinder_io.FIND_VOLUMES.name] == []  # reads only


@pytest_asyncio.fixture
async def sh(tenv: WorkflowEnvironment) -> AsyncIterator[ServerHarness]:
    async with nova_harness(tenv, FakeCloud(), f"q-{uuid.uuid4()}") as hs:
        yield hs
        await hs.close()


async def test_server_plan_of_an_image_change_is_the_rebuild_P7e_and_submits_nothing(
    sh: ServerHarness,
) -> None:
    wf = await sh.apply("Server", server_spec(OLD))
    await sh.until(lambda: sh.condition().get("status") == "True", "server available")
    plan = await wf.execute_update(UPDATE_PLAN, server_spec(NEW), result_type=Plan)
    [call] = plan.calls
    assert (call.rule, call.activity) == ("P7e", nova_io.REBUILD.name)
    assert call.request == {"server_id": sh.nova.only().id, "image_id": NEW}
    assert sh.nova.submits == [] and ((await sh.state(wf)).kind or {})["rebuild"] is None  # not even armed
    same = await wf.execute_update(UPDATE_PLAN, None, result_type=Plan)
    assert same.calls == [] and same.then.startswith("P6:")


async def test_keystone_plan_names_the_create_the_update_and_what_is_never_written(h: Harness) -> None:
    domain = h.cloud.add("domain", name="d", enabled=True)
    project = {"name": "p", "domain": "d", "description": "one"}
    wf = await h.apply("Project", project, name="p")
    await eventually(lambda: bool(h.cloud.statuses) and h.last_ready()["status"] == "True", "project created")
    [made] = h.cloud.of("project")
    writes = [c for c in h.cloud.calls if c in (keystone_io.CREATE.name, keystone_io.UPDATE.name)]

    changed = await wf.execute_update(UPDATE_PLAN, project | {"description": "two"}, result_type=Plan)
    [call] = changed.calls
    assert (call.rule, call.activity) == ("update", keystone_io.UPDATE.name)
    assert call.request == {"kind": "project", "id": made.id, "fields": {"description": "two"}}
    same = await wf.execute_update(UPDATE_PLAN, None, result_type=Plan)
    assert same.calls == [] and same.then == "converged: nothing to call"
    other = await wf.execute_update(UPDATE_PLAN, {"name": "q", "domain": "d"}, result_type=Plan)
    [create] = other.calls
    assert create.activity == keystone_io.CREATE.name
    assert create.request["fields"] == {"name": "q", "domain_id": domain.id, "enabled": True}
    missing = await wf.execute_update(UPDATE_PLAN, {"name": "p", "domain": "nowhere"}, result_type=Plan)
    assert missing.calls == [] and "waits for domain nowhere, which does not exist yet" in missing.then
    # A project that existed before osprov saw it is never rewritten by a plan's (or a pass's) update.
    h.cloud.add("project", name="old", domain_id=domain.id, description="theirs")
    adopted = await wf.execute_update(
        UPDATE_PLAN, {"name": "old", "domain": "d"} | {"description": "ours"}, result_type=Plan
    )
    assert adopted.calls == [] and "never written" in adopted.then
    assert [c for c in h.cloud.calls if c in (keystone_io.CREATE.name, keystone_io.UPDATE.name)] == writes


async def test_server_plan_of_a_flavor_change_is_the_resize_Z17_and_sends_nothing(sh: ServerHarness) -> None:
    wf = await sh.apply("Server", server_spec(OLD))
    await sh.until(lambda: sh.condition().get("status") == "True", "server available")
    plan = await wf.execute_update(UPDATE_PLAN, server_spec(OLD, flavor="m1.small"), result_type=Plan)
    [call] = plan.calls
    assert (call.rule, call.activity) == ("Z17", nova_io.RESIZE.name)
    assert call.request == {"server_id": sh.nova.only().id, "flavor": "m1.small"}
    assert sh.nova.resizes == [] and ((await sh.state(wf)).kind or {})["resize"] is None
