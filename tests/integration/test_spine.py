"""The spine end to end: CRD → bridge → Temporal → worker → real Keystone → status.

Worker and bridge run as real processes; outcomes are asserted in Keystone (openstacksdk admin
client) and in the resources' status. Keystone names are unique per run (Keystone outlives runs).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any, TypeAlias

import pytest
from temporalio.client import Client, WorkflowExecutionStatus

from devenv.testing import StackEnv
from tests.integration.test_identity_support import _claimed_object_workflows, workflow_id
from tests.support.osprov import Osprov, admin_connection, run_osprov
from tests.support.waiting import wait_for

pytestmark = pytest.mark.stack

Identity: TypeAlias = Any  # openstacksdk's identity proxy (v3); its stubs type it as a v2|v3 union


@pytest.fixture(scope="module")
def osprov(identity_stack: StackEnv, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Osprov]:
    yield from run_osprov(identity_stack, tmp_path_factory.mktemp("spine"), resync_seconds=5)


@pytest.fixture(scope="module")
def ks(identity_stack: StackEnv) -> Iterator[Identity]:
    conn = admin_connection(identity_stack)
    yield conn.identity
    conn.close()


def uniq(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def services_named(ks: Identity, name: str, type_: str) -> list[Any]:
    return [s for s in ks.services(name=name) if s.name == name and s.type == type_]


def test_apply_domain_and_project_ready_with_keystone_ids(osprov: Osprov, ks: Identity) -> None:
    dom = uniq("dom")
    osprov.apply("Domain", "d1", {"name": dom, "description": "first"})
    osprov.apply("Project", "p1", {"name": "proj", "domain": dom, "description": "a project"})
    d = osprov.wait_ready("Domain", "d1")
    p = osprov.wait_ready("Project", "p1")
    kd = ks.find_domain(dom)
    assert kd.id == d["status"]["domainID"] and kd.description == "first" and kd.is_enabled
    kp = ks.find_project("proj", domain_id=kd.id)
    assert kp.id == p["status"]["projectID"] and kp.description == "a project"
    cond = osprov.condition("Project", "p1")
    assert cond and cond["reason"] == "Reconciled" and cond["observedGeneration"] == 1


def test_the_runs_the_bridge_and_a_claim_start_record_no_patch_marker(
    osprov: Osprov, identity_stack: StackEnv
) -> None:
    """The bridge stamps a resource's run, and the claim activity its object's run, with the releases their
    code knows (workflows/patches.py, generations): neither records a patch marker. Before, each recorded
    its release's marker and the TemporalChangeVersion upsert with it."""
    dom = uniq("dom")
    osprov.apply("Domain", "gen-d", {"name": dom})
    osprov.apply("Project", "gen-p", {"name": "proj", "domain": dom})
    osprov.wait_ready("Project", "gen-p")
    resource = workflow_id(osprov, "Project", "gen-p")

    async def markers() -> dict[str, list[str]]:
        client = await Client.connect(
            identity_stack.temporal_address, namespace=identity_stack.temporal_namespace
        )
        objects = await _claimed_object_workflows(client, resource)
        assert len(objects) == 1, objects  # the project (the domain is the Domain resource's claim)
        found: dict[str, list[str]] = {}
        for wf_id in [resource, *objects]:
            history = await client.get_workflow_handle(wf_id).fetch_history()
            found[wf_id] = [
                e.marker_recorded_event_attributes.marker_name
                for e in history.events
                if e.HasField("marker_recorded_event_attributes")
                and e.marker_recorded_event_attributes.marker_name == "core_patch"
            ]
        return found

    found = asyncio.run(markers())
    assert len(found) == 2 and all(m == [] for m in found.values()), found


def test_spec_change_is_patched_in_place(osprov: Osprov, ks: Identity) -> None:
    dom = uniq("dom")
    osprov.apply("Domain", "d2", {"name": dom, "description": "before"})
    first = osprov.wait_ready("Domain", "d2")["status"]["domainID"]
    osprov.apply("Domain", "d2", {"name": dom, "description": "after", "enabled": False})
    second = osprov.wait_ready("Domain", "d2", generation=2)["status"]["domainID"]
    kd = ks.get_domain(first)
    assert second == first and kd.description == "after" and not kd.is_enabled


def test_drift_made_in_keystone_is_repaired_by_resync(osprov: Osprov, ks: Identity) -> None:
    name = uniq("svc")
    osprov.apply("Service", "s1", {"name": name, "type": "drift-test", "description": "declared"})
    sid = osprov.wait_ready("Service", "s1")["status"]["serviceID"]
    ks.update_service(sid, description="edited by hand")
    wait_for(lambda: ks.get_service(sid).description == "declared", "resync repairs the description", 60)
    assert [s.id for s in services_named(ks, name, "drift-test")] == [sid]


def test_dependency_created_later_unblocks_the_dependent(osprov: Osprov, ks: Identity) -> None:
    dom = uniq("late")
    osprov.apply("Project", "waits", {"name": "p", "domain": dom})
    cond = wait_for(lambda: osprov.condition("Project", "waits"), "Project reports its missing domain")
    assert cond["status"] == "False" and cond["reason"] == "ReconcileError"
    assert f"domain '{dom}' does not exist in Keystone yet" in cond["message"]
    osprov.apply("Domain", "late", {"name": dom})
    osprov.wait_ready("Project", "waits", timeout_s=90)  # by retry: the Project itself never changed
    assert (osprov.get("Project", "waits") or {})["metadata"]["generation"] == 1
    assert ks.find_project("p", domain_id=ks.find_domain(dom).id) is not None


def test_two_resources_naming_one_object_converge_on_it(osprov: Osprov, ks: Identity) -> None:
    role = uniq("role")
    osprov.apply("Role", "chart-a-role", {"name": role})
    osprov.apply("Role", "chart-b-role", {"name": role})
    a = osprov.wait_ready("Role", "chart-a-role")["status"]["roleID"]
    b = osprov.wait_ready("Role", "chart-b-role")["status"]["roleID"]
    assert a == b
    assert [r.id for r in ks.roles(name=role) if r.name == role] == [a]


def test_worker_killed_mid_reconcile_duplicates_nothing(osprov: Osprov, ks: Identity) -> None:
    names = [uniq("crash") for _ in range(6)]
    for i, name in enumerate(names):
        osprov.apply("Service", f"crash-{i}", {"name": name, "type": "crash-test"})
    # Kill -9 as soon as the first create landed: the others are in flight or not yet started.
    wait_for(lambda: any(services_named(ks, n, "crash-test") for n in names), "a first service created", 60)
    osprov.worker.kill()
    osprov.worker.start()
    for i in range(len(names)):
        osprov.wait_ready("Service", f"crash-{i}", timeout_s=120)
    for i, name in enumerate(names):
        found = services_named(ks, name, "crash-test")
        assert len(found) == 1, f"{name}: {len(found)} services in Keystone"
        assert found[0].id == (osprov.get("Service", f"crash-{i}") or {})["status"]["serviceID"]


def test_bridge_restart_loses_no_change(osprov: Osprov, ks: Identity, identity_stack: StackEnv) -> None:
    keep, new, gone = uniq("keep"), uniq("new"), uniq("gone")
    osprov.apply("Domain", "keep", {"name": keep, "description": "v1"})
    osprov.apply("Domain", "gone", {"name": gone})
    osprov.wait_ready("Domain", "keep")
    gone_obj = osprov.wait_ready("Domain", "gone")
    osprov.bridge.kill()
    # While the bridge is down: an update, a create and a delete.
    osprov.apply("Domain", "keep", {"name": keep, "description": "v2"})
    osprov.apply("Domain", "new", {"name": new})
    osprov.delete("Domain", "gone")
    osprov.bridge.start()
    osprov.wait_ready("Domain", "keep", generation=2)
    osprov.wait_ready("Domain", "new")
    assert ks.find_domain(keep).description == "v2"
    assert ks.find_domain(new) is not None
    assert ks.find_domain(gone) is not None  # deletionPolicy retain: Keystone untouched
    wf_id = f"Domain/{osprov.namespace}/gone/{gone_obj['metadata']['uid']}"
    wait_for(
        lambda: _status(identity_stack, wf_id) == WorkflowExecutionStatus.COMPLETED,
        "the deleted resource's workflow completed",
        60,
    )


def _status(stack: StackEnv, workflow_id: str) -> WorkflowExecutionStatus | None:
    async def describe() -> WorkflowExecutionStatus | None:
        client = await Client.connect(stack.temporal_address, namespace=stack.temporal_namespace)
        return (await client.get_workflow_handle(workflow_id).describe()).status

    return asyncio.run(describe())


def test_logs_name_the_resource(osprov: Osprov) -> None:
    text = osprov.worker.log_text() + osprov.bridge.log_text()
    assert f'"namespace": "{osprov.namespace}"' in text
    assert '"workflow_id": "Domain/' in text
