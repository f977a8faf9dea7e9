"""Volume end to end on the real local stack: CR → bridge → Temporal → worker → real Cinder → status.

Outcomes are asserted in Cinder (admin openstacksdk client) and in the resources' status. Each module run
uses its own Keystone project, in which the controller's user (admin, the worker's clouds.yaml) is granted
the member role, so every Cinder call runs with a token scoped to that project.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import openstack.connection
import pytest
from temporalio.client import Client

from devenv.config import PORTS
from devenv.faults.cloud_state import cinder_reset_status
from devenv.faults.proxy import FaultProxy
from devenv.openstack.catalog import VOLUME_TYPE
from devenv.testing import StackEnv
from osprov.api.cinder_io import ERROR_MESSAGE, volume_name
from tests.support.osprov import (
    Osprov,
    clouds_env,
    endpoint_override,
    ensure_crd,
    run_osprov,
)
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.stack, pytest.mark.fullstack]

AVAILABLE = "Available"
CONTROLLER_USER = "admin"  # the user of the worker's clouds.yaml (cloud osprov-admin)


def uniq(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def identity(conn: openstack.connection.Connection) -> Any:
    return conn.identity  # Identity v3 (the SDK types it as a v2/v3 union)


def grant_member(admin: openstack.connection.Connection, project_id: str) -> None:
    user = identity(admin).find_user(CONTROLLER_USER, domain_id="default", ignore_missing=False)
    role = identity(admin).find_role("member", ignore_missing=False)
    identity(admin).assign_project_role_to_user(project_id, user, role)


@pytest.fixture(scope="module")
def project(admin: openstack.connection.Connection) -> Iterator[str]:
    proj = identity(admin).create_project(name=uniq("vol"), domain_id="default")
    grant_member(admin, proj.id)
    yield str(proj.name)
    for vol in admin.block_storage.volumes(all_projects=True, project_id=proj.id):
        admin.block_storage.delete_volume(vol.id, ignore_missing=True)


@pytest.fixture(scope="module")
def cinder_proxy() -> Iterator[FaultProxy]:
    """The worker reaches Cinder through this proxy (crash windows on demand); it passes by default."""
    with FaultProxy("127.0.0.1", PORTS.cinder) as proxy:
        yield proxy


@pytest.fixture(scope="module")
def osprov(
    full_stack: StackEnv, tmp_path_factory: pytest.TempPathFactory, cinder_proxy: FaultProxy
) -> Iterator[Osprov]:
    ensure_crd(full_stack, "Volume")
    tmp = tmp_path_factory.mktemp("volume")
    cinder = endpoint_override("block_storage", f"{cinder_proxy.url}/v3/%(project_id)s", "3")
    # A short resync, so a volume put into error behind osprov's back is seen within seconds.
    yield from run_osprov(full_stack, tmp, resync_seconds=5, extra_env=clouds_env(full_stack, tmp, cinder))


def spec(project: str, **extra: Any) -> dict[str, Any]:
    return {"project": {"name": project, "domain": "Default"}, "size": 1, "deletionPolicy": "delete", **extra}


def cinder_named(admin: openstack.connection.Connection, name: str) -> list[Any]:
    return [v for v in admin.block_storage.volumes(all_projects=True, name=name) if v.name == name]


def provisioned(
    osprov: Osprov, name: str, timeout_s: float = 60, generation: int | None = None
) -> dict[str, Any]:
    """Wait for Available=True, then read the resource afresh (wait_ready may return an older copy than
    the one it judged ready) and check it is Provisioned with its volume ID."""
    osprov.wait_ready("Volume", name, ctype=AVAILABLE, timeout_s=timeout_s, generation=generation)
    obj = osprov.get("Volume", name)
    assert obj is not None and "volumeID" in obj["status"]
    cond = osprov.condition("Volume", name, AVAILABLE)
    assert cond is not None and cond["reason"] == "Provisioned"
    return obj


def uid_of(osprov: Osprov, name: str) -> str:
    return str((osprov.get("Volume", name) or {})["metadata"]["uid"])


def test_create_is_available_with_status_then_delete_removes_it(
    osprov: Osprov, admin: openstack.connection.Connection, project: str
) -> None:
    # A tag named like a linkage key must not override it.
    osprov.apply("Volume", "data", spec(project, tags={"uid": "spoofed", "team": "storage"}))
    obj = provisioned(osprov, "data")
    uid = obj["metadata"]["uid"]
    [vol] = cinder_named(admin, volume_name(uid))
    assert vol.status == "available" and vol.size == 1
    assert obj["status"]["volumeID"] == vol.id and obj["status"]["size"] == 1
    cond = osprov.condition("Volume", "data", AVAILABLE)
    assert cond and cond["reason"] == "Provisioned"
    meta = vol.metadata
    assert meta["osprov.uid"] == uid and meta["osprov.tag.uid"] == "spoofed"
    assert meta["osprov.kind"] == "Volume" and meta["osprov.namespace"] == osprov.namespace
    assert meta["osprov.project"] == f"Default/{project}" and meta["osprov.region"] == "RegionOne"
    assert meta["osprov.tag.team"] == "storage"
    assert identity(admin).get_project(vol.project_id).name == project  # created in the resource's project

    # Tags are mutable: a change is written to Cinder, a dropped tag removed, foreign metadata kept.
    admin.block_storage.set_volume_metadata(vol.id, **{"set-by-hand": "yes"})
    osprov.apply("Volume", "data", spec(project, tags={"team": "platform", "uid": None}))  # merge patch
    provisioned(osprov, "data", generation=2)
    meta = admin.block_storage.get_volume(vol.id).metadata
    assert meta["osprov.tag.team"] == "platform" and "osprov.tag.uid" not in meta
    assert meta["set-by-hand"] == "yes" and meta["osprov.uid"] == uid

    osprov.delete("Volume", "data")
    wait_for(lambda: osprov.get("Volume", "data") is None, "the Volume resource is gone", 60)
    assert cinder_named(admin, volume_name(uid)) == []
    # The wait's reads by ID found the deleted volume gone without a failed step (a failed step costs a
    # backoff of seconds; the benchmark found one where Cinder refuses non-admins the name filter).
    assert failed_steps(osprov, f"Volume/{osprov.namespace}/data/{uid}") == []


def failed_steps(osprov: Osprov, workflow_id: str) -> list[str]:
    """The failure messages of the workflow's activity attempts that failed (all runs)."""

    async def read() -> list[str]:
        client = await Client.connect(
            osprov.stack.temporal_address, namespace=osprov.stack.temporal_namespace
        )
        failures = []
        async for wf in client.list_workflows(query=f"WorkflowId = '{workflow_id}'"):
            history = await client.get_workflow_handle(wf.id, run_id=wf.run_id).fetch_history()
            failures += [
                e.activity_task_failed_event_attributes.failure.message
                for e in history.events
                if e.HasField("activity_task_failed_event_attributes")
            ]
        return failures

    return asyncio.run(read())


def test_volume_class_becomes_the_cinder_volume_type(
    osprov: Osprov, admin: openstack.connection.Connection, project: str
) -> None:
    vtype = admin.block_storage.find_type(VOLUME_TYPE, ignore_missing=False)
    osprov.apply("Volume", "typed", spec(project, volumeClassID=vtype.id, size=2))
    obj = provisioned(osprov, "typed")
    vol = admin.block_storage.get_volume(obj["status"]["volumeID"])
    assert vol.volume_type == VOLUME_TYPE and vol.size == 2


def test_worker_killed_after_create_accepted_adopts_instead_of_duplicating(
    osprov: Osprov, admin: openstack.connection.Connection, project: str, cinder_proxy: FaultProxy
) -> None:
    names = [f"crash-{i}" for i in range(4)]
    # Cinder accepts every create, but its answers never reach the worker: the window is held open.
    with cinder_proxy.holding(("POST",)):
        for name in names:
            osprov.apply("Volume", name, spec(project))
        uids = {name: uid_of(osprov, name) for name in names}
        first = wait_for(
            lambda: [n for n, u in uids.items() if cinder_named(admin, volume_name(u))], "a first volume", 60
        )
        osprov.worker.kill()
    # The window under test: Cinder accepted a create whose volume no status names yet.
    assert all("volumeID" not in ((osprov.get("Volume", n) or {}).get("status") or {}) for n in first)
    osprov.worker.start()
    for name in names:
        obj = provisioned(osprov, name, timeout_s=150)
        found = cinder_named(admin, volume_name(uids[name]))
        assert [v.id for v in found] == [obj["status"]["volumeID"]], f"{name}: {len(found)} volumes in Cinder"


def test_volume_whose_name_only_starts_with_ours_is_not_adopted(
    osprov: Osprov, admin: openstack.connection.Connection, project: str
) -> None:
    # The bridge is stopped so the look-alike exists before the workflow's first lookup.
    osprov.bridge.stop()
    osprov.apply("Volume", "lookalike", spec(project))
    uid = uid_of(osprov, "lookalike")
    scoped = admin.connect_as_project({"name": project, "domain_id": "default"})
    lookalike = scoped.block_storage.create_volume(name=f"{volume_name(uid)}-copy", size=1)
    osprov.bridge.start()
    obj = provisioned(osprov, "lookalike", timeout_s=90)
    assert obj["status"]["volumeID"] != lookalike.id
    assert [v.id for v in cinder_named(admin, volume_name(uid))] == [obj["status"]["volumeID"]]
    assert admin.block_storage.get_volume(lookalike.id).name == f"{volume_name(uid)}-copy"


def test_cinder_error_state_is_errored_with_only_the_user_safe_message(
    osprov: Osprov, admin: openstack.connection.Connection, project: str
) -> None:
    osprov.apply("Volume", "broken", spec(project))
    obj = provisioned(osprov, "broken")
    volume_id = obj["status"]["volumeID"]
    cinder_reset_status(admin, volume_id, "error")  # behind osprov's back: seen at the next resync

    def errored() -> dict[str, Any] | None:
        cond = osprov.condition("Volume", "broken", AVAILABLE)
        return cond if cond and cond["reason"] == "Errored" else None

    cond = wait_for(errored, "Available=False/Errored", 60)
    assert cond is not None and cond["status"] == "False" and cond["message"] == ERROR_MESSAGE
    status = (osprov.get("Volume", "broken") or {})["status"]
    assert set(status) == {"observedGeneration", "conditions", "volumeID", "size"}
    assert [c["message"] for c in status["conditions"]] == [ERROR_MESSAGE]

    # Cinder's own details are in the operator log, keyed by the volume.
    def logged() -> list[str]:
        lines = osprov.worker.log_text().splitlines()
        return [line for line in lines if "error state" in line and volume_id in line and '"error"' in line]

    assert wait_for(logged, "the operator log names the errored volume and Cinder's status", 30)
    # An errored volume is still deleted with its resource.
    osprov.delete("Volume", "broken")
    wait_for(lambda: osprov.get("Volume", "broken") is None, "the Volume resource is gone", 60)
    assert admin.block_storage.find_volume(volume_id, all_projects=True) is None


def test_project_declared_later_with_identity_kinds_unblocks_the_volume(
    osprov: Osprov, admin: openstack.connection.Connection
) -> None:
    late = uniq("late")
    osprov.apply("Volume", "waits", spec(late))
    cond = wait_for(lambda: osprov.condition("Volume", "waits", AVAILABLE), "missing project reported", 60)
    assert cond is not None and cond["status"] == "False" and cond["reason"] == "Provisioning"
    assert f"project '{late}' in domain 'Default' does not exist in Keystone yet" in cond["message"]
    # The project and the controller's grant, declared with the identity kinds (as in examples/cinder).
    osprov.apply("Project", "late", {"name": late, "domain": "Default"})
    osprov.apply(
        "RoleAssignment",
        "late-controller",
        {
            "role": {"name": "member"},
            "user": {"name": CONTROLLER_USER, "domain": "Default"},
            "project": {"name": late, "domain": "Default"},
        },
    )
    obj = provisioned(osprov, "waits", timeout_s=120)
    [vol] = cinder_named(admin, volume_name(obj["metadata"]["uid"]))
    assert identity(admin).get_project(vol.project_id).name == late
    osprov.delete("Volume", "waits")
    wait_for(lambda: osprov.get("Volume", "waits") is None, "the Volume resource is gone", 60)
    assert cinder_named(admin, volume_name(obj["metadata"]["uid"])) == []


def test_delete_of_a_volume_whose_project_never_existed_succeeds(osprov: Osprov) -> None:
    osprov.apply("Volume", "orphan", spec(uniq("never")))
    wait_for(lambda: osprov.condition("Volume", "orphan", AVAILABLE), "missing project reported", 60)
    osprov.delete("Volume", "orphan")
    wait_for(lambda: osprov.get("Volume", "orphan") is None, "the Volume resource is gone", 60)


def test_project_without_a_grant_for_the_controller_says_what_to_grant(
    osprov: Osprov, admin: openstack.connection.Connection
) -> None:
    proj = identity(admin).create_project(name=uniq("nogrant"), domain_id="default")
    osprov.apply("Volume", "nogrant", spec(str(proj.name)))

    def refused() -> dict[str, Any] | None:
        cond = osprov.condition("Volume", "nogrant", AVAILABLE)
        return cond if cond and "has no role in it" in cond["message"] else None

    cond = wait_for(refused, "the missing grant reported", 60)
    assert cond is not None and cond["status"] == "False" and cond["reason"] == "Provisioning"
    grant_member(admin, proj.id)  # retried with backoff: no change to the resource needed
    obj = provisioned(osprov, "nogrant", timeout_s=90)
    assert obj["metadata"]["generation"] == 1
    osprov.delete("Volume", "nogrant")
    wait_for(lambda: osprov.get("Volume", "nogrant") is None, "the Volume resource is gone", 60)
