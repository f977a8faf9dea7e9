"""User, RoleAssignment and Endpoint decisions on the time-skipping server with stubbed activities."""

from __future__ import annotations

from typing import Any

from temporalio.api.enums.v1 import EventType

from osprov.api import keystone_io as io
from osprov.api import ownership as own
from osprov.api import sweep as sw
from osprov.api.messages import SIGNAL_SECRET_CHANGED, SecretChanged
from osprov.api.ownership import ObjectKey
from tests.workflows.harness import Harness, eventually
from tests.workflows.history import local_activity_results

USER = {"name": "cinder", "domain": "service", "passwordSecret": {"name": "cinder-pw"}}


def seed_domain(h: Harness) -> str:
    return h.cloud.add("domain", name="service", enabled=True).id


async def test_new_user_gets_its_password_without_a_probe(h: Harness) -> None:
    seed_domain(h)
    h.cloud.secrets["ns/cinder-pw/OS_PASSWORD"] = "s3cret"
    await h.apply("User", USER)
    await eventually(lambda: bool(h.cloud.statuses), "user reconciled")
    [user] = h.cloud.of("user")
    assert h.cloud.passwords[user.id] == "s3cret"
    assert h.cloud.count(io.PROBE_PASSWORD.name) == 0 and h.cloud.count(io.SET_PASSWORD.name) == 1
    assert h.cloud.statuses[-1]["userID"] == user.id


async def test_password_probe_runs_only_on_change_and_the_resync_logs_in_from_the_sweep(h: Harness) -> None:
    seed_domain(h)
    h.cloud.secrets["ns/cinder-pw/OS_PASSWORD"] = "s3cret"
    wf = await h.apply("User", USER)
    await eventually(lambda: bool(h.cloud.statuses), "user reconciled")
    # A relist of the same generation: no probe.
    await h.signal(wf, 1, USER)
    await h.sleep_settled(300)
    assert h.cloud.count(io.PROBE_PASSWORD.name) == 0
    # The periodic check is the sweep's scan, which logs in with the Secret's password; it is valid, so
    # the user's object is not woken: no probe of its own, nothing written.
    await h.env.sleep(301)
    await eventually(lambda: h.cloud.count(sw.SCAN.name) == 1, "the sweep's scan")
    assert h.cloud.count(io.PROBE_PASSWORD.name) == 0
    assert h.cloud.count(io.SET_PASSWORD.name) == 1


async def test_rotated_secret_reaches_the_user_without_a_user_change(h: Harness) -> None:
    seed_domain(h)
    h.cloud.secrets["ns/cinder-pw/OS_PASSWORD"] = "old"
    wf = await h.apply("User", USER)
    await eventually(lambda: bool(h.cloud.statuses), "user reconciled")
    [user] = h.cloud.of("user")
    h.cloud.secrets["ns/cinder-pw/OS_PASSWORD"] = "new"
    await h.send(
        wf, SecretChanged(namespace="ns", name="cinder-pw", resource_version="2"), SIGNAL_SECRET_CHANGED
    )
    # The status is written after the password, in a later activity: wait on the status.
    await eventually(lambda: "password updated" in h.last_ready()["message"], "rotation reported")
    assert h.cloud.passwords[user.id] == "new"
    assert h.cloud.count(io.PROBE_PASSWORD.name) == 1  # probed once, 401, then written


async def test_missing_secret_is_reported_before_any_keystone_write(h: Harness) -> None:
    seed_domain(h)
    await h.apply("User", USER)
    await eventually(lambda: bool(h.cloud.statuses), "failure reported")
    ready = h.last_ready()
    assert ready["status"] == "False" and "Secret ns/cinder-pw has no key OS_PASSWORD" in ready["message"]
    assert h.cloud.of("user") == [] and h.cloud.count(io.CREATE.name) == 0


async def test_role_assignment_puts_missing_grant_and_restores_a_revoked_one(h: Harness) -> None:
    dom = seed_domain(h)
    role = h.cloud.add("role", name="admin")
    user = h.cloud.add("user", name="cinder", domain_id=dom)
    proj = h.cloud.add("project", name="service", domain_id=dom)
    spec = {
        "role": {"name": "admin"},
        "user": {"name": "cinder", "domain": "service"},
        "project": {"name": "service", "domain": "service"},
    }
    await h.apply("RoleAssignment", spec)
    await eventually(lambda: bool(h.cloud.grants), "grant put")
    [grant] = h.cloud.grants
    assert io.Grant.model_validate_json(grant) == io.Grant(
        role_id=role.id, user_id=user.id, project_id=proj.id
    )
    h.cloud.grants.clear()  # revoked by hand
    await h.env.sleep(601)
    await eventually(lambda: bool(h.cloud.grants), "grant restored by the resync")
    assert h.cloud.count(io.PUT_GRANT.name) == 2


async def test_role_assignment_delete_revokes_the_recorded_grant(h: Harness) -> None:
    dom = seed_domain(h)
    h.cloud.add("role", name="reader")
    h.cloud.add("group", name="admins", domain_id=dom)
    spec = {
        "role": {"name": "reader"},
        "group": {"name": "admins", "domain": "service"},
        "domain": {"name": "service"},
        "deletionPolicy": "delete",
    }
    wf = await h.apply("RoleAssignment", spec)
    await eventually(lambda: bool(h.cloud.grants), "grant put")
    await h.signal(wf, 1, spec, deleting=True, finalizers=["keystone.osh.openstack.org/finalizer"])
    assert await wf.result() == "deleted"
    assert h.cloud.grants == set() and h.cloud.count(io.REVOKE_GRANT.name) == 1


async def test_a_new_users_grants_hear_of_it_before_its_password_is_set(h: Harness) -> None:
    """Patch keystone-user-told-before-password: a grant needs the user's ID, not its password, and
    Keystone takes ~0.2 s to hash one. Before, the grants waited for the password on the dependency
    chain (the last step of the Cinder example)."""
    dom = seed_domain(h)
    h.cloud.add("role", name="admin")
    h.cloud.add("project", name="service", domain_id=dom)
    h.cloud.secrets["ns/cinder-pw/OS_PASSWORD"] = "s3cret"
    spec = {
        "role": {"name": "admin"},
        "user": {"name": "cinder", "domain": "service"},
        "project": {"name": "service", "domain": "service"},
    }
    grant = await h.apply("RoleAssignment", spec, name="grant")
    await eventually(lambda: bool(h.written.get(grant.id)), "the grant waiting for its user")
    assert h.written[grant.id]["conditions"][0]["status"] == "False"
    await h.apply("User", USER, name="user")
    await eventually(lambda: bool(h.cloud.grants), "grant put")
    [user] = h.cloud.of("user")
    assert h.cloud.passwords[user.id] == "s3cret"

    key = ObjectKey(kind="user", domain="service", name="cinder")
    history = await h.env.client.get_workflow_handle(key.workflow_id(h.keystone, h.queue)).fetch_history()
    steps: list[str] = []
    for e in history.events:
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            steps.append(e.activity_task_scheduled_event_attributes.activity_type.name)
        steps += [f"tell {len(told['told'])}" for told in local_activity_results([e], own.TELL.name)]
    after_create = steps[steps.index(io.CREATE.name) + 1 :]
    assert after_create[:2] == ["tell 1", io.SET_PASSWORD.name], steps  # before: the password first
    assert "tell 1" not in after_create[2:], steps  # told once of its ID


ENDPOINT: dict[str, Any] = {
    "service": {"name": "cinderv3", "type": "volumev3"},
    "region": "RegionOne",
    "urls": {"internal": "http://cinder:8776/v3", "public": "http://cinder.example/v3"},
}


async def test_endpoint_publishes_given_interfaces_and_patches_urls_in_place(h: Harness) -> None:
    svc = h.cloud.add("service", name="cinderv3", type="volumev3")
    wf = await h.apply("Endpoint", ENDPOINT)
    await eventually(lambda: bool(h.cloud.statuses), "endpoints created")
    eps = {e.fields["interface"]: e for e in h.cloud.of("endpoint")}
    assert set(eps) == {"internal", "public"}  # admin omitted: not published
    assert all(e.fields["service_id"] == svc.id for e in eps.values())
    assert [r.id for r in h.cloud.of("region")] and h.cloud.statuses[-1]["endpointIDs"] == {
        i: e.id for i, e in eps.items()
    }
    changed = ENDPOINT | {"urls": ENDPOINT["urls"] | {"public": "https://cinder.example/v3"}}
    await h.signal(wf, 2, changed)
    await eventually(lambda: h.cloud.statuses[-1]["observedGeneration"] == 2, "generation 2")
    public = h.cloud.objects["endpoint"][eps["public"].id]
    assert public.fields["url"] == "https://cinder.example/v3"  # same ID, patched
    assert len(h.cloud.of("endpoint")) == 2


async def test_endpoint_duplicates_adopt_lowest_and_are_named_not_deleted(h: Harness) -> None:
    svc = h.cloud.add("service", name="cinderv3", type="volumev3")
    h.cloud.add("region", name="RegionOne")
    h.cloud.objects["region"] = {"RegionOne": io.KeystoneObject(kind="region", id="RegionOne", fields={})}
    keys = {"service_id": svc.id, "region_id": "RegionOne", "interface": "public"}
    first = h.cloud.add("endpoint", url="http://a", **keys)
    second = h.cloud.add("endpoint", url="http://b", **keys)
    await h.apply("Endpoint", ENDPOINT | {"urls": {"public": "http://a"}})
    await eventually(lambda: bool(h.cloud.statuses), "reconciled")
    assert h.cloud.statuses[-1]["endpointIDs"] == {"public": first.id}
    assert second.id in h.last_ready()["message"]
    assert {e.id for e in h.cloud.of("endpoint")} == {first.id, second.id}


async def test_domain_delete_disables_it_first(h: Harness) -> None:
    spec = {"name": "gone-soon", "deletionPolicy": "delete"}
    wf = await h.apply("Domain", spec)
    await eventually(lambda: bool(h.cloud.statuses), "created")
    await h.signal(wf, 1, spec, deleting=True, finalizers=["keystone.osh.openstack.org/finalizer"])
    assert await wf.result() == "deleted"
    assert h.cloud.of("domain") == []
    assert h.cloud.calls.index(io.UPDATE.name) < h.cloud.calls.index(
        io.DELETE.name
    )  # Keystone refuses enabled domains
