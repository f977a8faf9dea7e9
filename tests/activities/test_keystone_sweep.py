"""keystone.scan's comparison (activities/keystone_sweep.compare) on the real Keystone.

What an object workflow reports is what its own reads and writes returned (create, update, find by ID);
the scan digests what Keystone's lists return. These tests pin that both sides agree for every kind, and
that each kind of drift made outside osprov is named: a field changed, an object or a grant deleted, a
password changed, and the operator's policy changed.
"""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any, cast

import pytest
from openstack.identity.v3._proxy import Proxy as Identity
from temporalio.testing import ActivityEnvironment

from osprov.activities import cloud, keystone, keystone_sweep
from osprov.api import sweep as sw
from osprov.api.keystone_io import Create, Find, Grant, KeystoneObject, Probe, SetPassword, Update
from osprov.api.ownership import ObjectKey, Policy
from tests.activities.conftest import Cleanup, SecretStore

pytestmark = pytest.mark.stack


def swept(key: ObjectKey, obj: KeystoneObject | None = None, **extra: Any) -> sw.Swept:
    """A report as an object workflow makes it: the digest of the fields its own call returned."""
    fields = {"id": obj.id, "digest": sw.digest(dict(obj.fields))} if obj is not None else {}
    return sw.Swept(key=key, workflow_id=f"wf/{key.path}", **fields, **extra)


def create(env: ActivityEnvironment, kind: str, fields: dict[str, Any], find: Find) -> KeystoneObject:
    return env.run(keystone.create, Create(kind=kind, fields=fields, find=find))  # type: ignore[arg-type]


def test_scan_agrees_with_what_create_update_and_find_returned_and_names_every_drift(
    env: ActivityEnvironment,
    test_domain: str,
    unique: str,
    cleanup: Cleanup,
    secret_store: SecretStore,
    admin: Any,
) -> None:
    name = f"sweep-{unique}"
    project = create(
        env,
        "project",
        {"name": name, "domain_id": test_domain, "description": "v1"},
        Find(kind="project", name=name, filters={"domain_id": test_domain}),
    )
    user = create(
        env,
        "user",
        {"name": name, "domain_id": test_domain, "email": f"{name}@example.org"},
        Find(kind="user", name=name, filters={"domain_id": test_domain}),
    )
    role = create(env, "role", {"name": name}, Find(kind="role", name=name))
    cleanup.add("role", role.id)
    service = create(env, "service", {"name": name, "type": f"t-{unique}"}, Find(kind="service", name=name))
    cleanup.add("service", service.id)
    grant = Grant(role_id=role.id, user_id=user.id, project_id=project.id)
    env.run(keystone.put_grant, grant)
    secret, _ = secret_store.password_secret(f"sweep-{unique}")
    env.run(keystone.set_password, SetPassword(user_id=user.id, secret=secret))
    updated = env.run(keystone.update, Update(kind="service", id=service.id, fields={"description": "d"}))
    (found,) = env.run(keystone.find, Find(kind="project", filters={"id": project.id}))

    keys = {
        "project": ObjectKey(kind="project", domain="sweep", name=name),
        "user": ObjectKey(kind="user", domain="sweep", name=name),
        "role": ObjectKey(kind="role", name=name),
        "service": ObjectKey(kind="service", name=name, type=f"t-{unique}"),
    }
    grant_key = ObjectKey(kind="grant", role=keys["role"], subject=keys["user"], scope=keys["project"])
    probe = Probe(user_id=user.id, user_name=name, domain_id=test_domain, secret=secret)
    reports = [
        swept(keys["project"], found),  # a find by ID
        swept(keys["user"], user, probe=probe),  # a create's answer
        swept(keys["role"], role),
        swept(keys["service"], updated),  # an update's answer
        swept(grant_key, grant=grant),
    ]
    assert keystone_sweep.compare(reports) == sw.ScanResult(checked=5, drifted=[])

    # Changes made outside osprov, one of each kind of drift.
    admin.update_project(project.id, description="changed outside")
    admin.delete_role(role.id)  # also removes the grant
    other, _ = secret_store.password_secret(f"sweep-other-{unique}")
    env.run(keystone.set_password, SetPassword(user_id=user.id, secret=other))
    result = keystone_sweep.compare(reports)
    assert {d.path: d.reason for d in result.drifted} == {
        keys["project"].path: "fields changed",
        keys["role"].path: "deleted",
        grant_key.path: "grant missing",
        keys["user"].path: "password changed",
    }


def test_scan_names_an_object_whose_operator_policy_changed(env: ActivityEnvironment, admin: Any) -> None:
    (role,) = env.run(keystone.find, Find(kind="role", filters={"id": admin.find_role("admin").id}))
    key = ObjectKey(kind="role", name="admin")
    unchanged = swept(key, role, policy=Policy(protected=True, reason="the admin role"))
    assert keystone_sweep.compare([unchanged]).drifted == []
    # Reported when the policy allowed writes (e.g. before the operator's deny-list named it).
    assert keystone_sweep.compare([swept(key, role, policy=Policy(allowed=True))]).drifted == [
        sw.Drift(path=key.path, reason="the operator's policy changed")
    ]


def test_scan_reads_every_page_of_a_list_keystone_cuts_at_its_max_db_limit(admin: Any) -> None:
    """Keystone cuts a project list that names no `limit` at [DEFAULT] max_db_limit (1,000) and says
    nothing; the scan pages it, so an object past the cut is not read as deleted (before, every one was,
    and was woken on every tick)."""
    domain = admin.create_domain(name=f"osprovt-paged-{uuid.uuid4().hex[:8]}")
    try:

        def make(i: int) -> KeystoneObject:
            identity = cast(Identity, cloud.admin_connection().identity)  # one connection per thread
            return keystone.to_object("project", identity.create_project(name=f"p{i}", domain_id=domain.id))

        with ThreadPoolExecutor(4) as pool:
            projects = list(pool.map(make, range(keystone_sweep.PAGE + 5)))
        reports = [
            swept(ObjectKey(kind="project", domain="paged", name=p.fields["name"]), p) for p in projects
        ]
        assert keystone_sweep.compare(reports) == sw.ScanResult(checked=len(reports), drifted=[])

        # A project deleted outside osprov is still named: the pages are read to the end to look for it.
        admin.delete_project(projects[-1].id)
        assert keystone_sweep.compare(reports).drifted == [
            sw.Drift(path=reports[-1].key.path, reason="deleted")
        ]
    finally:
        admin.update_domain(domain.id, enabled=False)
        admin.delete_domain(domain.id, ignore_missing=True)
