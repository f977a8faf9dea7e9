"""The ownership table (docs/security.md), row by row, on the time-skipping server with a stubbed Keystone.

Each Keystone object has one workflow (its single writer and ownership record); resources claim it. The
real-Keystone versions of these, as an attacker would try them, are tests/integration/test_ownership.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from devenv.stack import DEV_CONTROLLER_GRANTS
from osprov.activities.ownership import policy_for
from osprov.api import keystone_io as io
from osprov.api.ownership import ObjectKey
from tests.workflows.harness import Harness, eventually

USER = {"name": "cinder", "domain": "service", "passwordSecret": {"name": "cinder-pw"}}
DELETE = {"deletionPolicy": "delete"}
FINALIZER = "keystone.osh.openstack.org/finalizer"


def status_of(h: Harness, kind_id: str) -> list[dict[str, Any]]:
    return [s for s in h.cloud.statuses if kind_id in s]


async def ready(h: Harness, wf: Any) -> dict[str, Any]:
    """The resource's Ready condition once its workflow wrote one for its current state."""
    await eventually(lambda: _latest(h, wf) is not None, f"{wf.id} reported")
    return _latest_cond(h, wf)


def _latest(h: Harness, wf: Any) -> dict[str, Any] | None:
    return h.written.get(wf.id)


def _latest_cond(h: Harness, wf: Any) -> dict[str, Any]:
    status = h.written[wf.id]
    return status["conditions"][0]  # type: ignore[no-any-return]


async def delete(h: Harness, wf: Any, spec: dict[str, Any]) -> None:
    await h.signal(wf, 1, spec, deleting=True, finalizers=[FINALIZER])
    await wf.result()


@pytest.fixture(autouse=True)
def no_operator_lists(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every row starts from an operator who allow-listed and denied nothing (tests set their own)."""
    monkeypatch.delenv("OSPROV_OWNERSHIP_ALLOW", raising=False)
    monkeypatch.delenv("OSPROV_OWNERSHIP_DENY", raising=False)


# --- origin: created by osprov ---------------------------------------------------------------------------


async def test_row_created_converges_fields_and_is_deleted_by_its_last_delete_claimant(h: Harness) -> None:
    wf = await h.apply("Domain", {"name": "d", "description": "mine"} | DELETE, finalizers=[FINALIZER])
    cond = await ready(h, wf)
    assert (cond["status"], cond["reason"]) == ("True", "Reconciled") and "created domain d" in cond[
        "message"
    ]
    [dom] = h.cloud.of("domain")
    h.cloud.objects["domain"][dom.id] = dom.model_copy(
        update={"fields": dom.fields | {"description": "hand"}}
    )
    await h.env.sleep(601)  # the resync repairs drift on an object osprov created
    await eventually(lambda: h.cloud.of("domain")[0].fields["description"] == "mine", "drift repaired")
    await delete(h, wf, {"name": "d", "description": "mine"} | DELETE)
    assert h.cloud.of("domain") == []


async def test_row_created_is_still_deleted_when_its_delete_fails_after_every_retry(h: Harness) -> None:
    """Keystone refused the delete through all of its retries: the object's workflow takes the step again
    a minute later (patch keystone-object-step-retried). Before, the failure failed that workflow, its
    record (created by osprov) ended, and the release sent again found no record: the domain was kept."""
    wf = await h.apply("Domain", {"name": "d"} | DELETE, finalizers=[FINALIZER])
    await ready(h, wf)
    h.cloud.fail_deletes = 5  # every attempt (DEFAULT_RETRY's 5)
    await h.signal(wf, 1, {"name": "d"} | DELETE, deleting=True, finalizers=[FINALIZER])
    await eventually(lambda: h.cloud.fail_deletes == 0, "the refused deletes")
    await h.until(lambda: h.cloud.of("domain") == [], "deleted on the step taken again", virtual_s=300)
    assert await wf.result() == "deleted"


async def test_row_created_survives_while_another_resource_still_declares_it(h: Harness) -> None:
    """Item 4: two namespaces declare one object; deleting the one with delete leaves it for the other."""
    a = await h.apply("Domain", {"name": "shared"} | DELETE, name="a", finalizers=[FINALIZER])
    await ready(h, a)
    b = await h.apply("Domain", {"name": "shared"}, name="b")
    assert (await ready(h, b))["status"] == "True"
    await delete(h, a, {"name": "shared"} | DELETE)
    assert [d.fields["name"] for d in h.cloud.of("domain")] == ["shared"]
    assert h.cloud.count(io.DELETE.name) == 0


# --- origin: found ---------------------------------------------------------------------------------------


async def test_row_found_is_adopted_read_only_with_drift_shown_and_never_deleted(h: Harness) -> None:
    """Items 2 and 3: an existing object is neither rewritten (enabled: false) nor deleted."""
    h.cloud.add("domain", name="prod", description="theirs", enabled=True)
    spec = {"name": "prod", "description": "mine", "enabled": False} | DELETE
    wf = await h.apply("Domain", spec, finalizers=[FINALIZER])
    cond = await ready(h, wf)
    assert (cond["status"], cond["reason"]) == ("True", "Adopted")
    assert "osprov did not create it" in cond["message"] and "description, enabled" in cond["message"]
    assert h.cloud.count(io.UPDATE.name) == 0
    await delete(h, wf, spec)
    assert h.cloud.of("domain")[0].fields == {"name": "prod", "description": "theirs", "enabled": True}
    assert h.cloud.count(io.DELETE.name) == 0


async def test_row_found_and_allow_listed_is_converged_but_never_deleted(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OSPROV_OWNERSHIP_ALLOW", "domain/legacy*")
    h.cloud.add("domain", name="legacy", description="old", enabled=True)
    spec = {"name": "legacy", "description": "new"} | DELETE
    wf = await h.apply("Domain", spec, finalizers=[FINALIZER])
    cond = await ready(h, wf)
    assert (cond["status"], cond["reason"]) == ("True", "Reconciled")
    assert h.cloud.of("domain")[0].fields["description"] == "new"
    await delete(h, wf, spec)
    assert h.cloud.of("domain")[0].fields["name"] == "legacy"


async def test_existing_user_never_gets_a_password_unless_allow_listed(h: Harness) -> None:
    """Item 1: a User named like an existing user does not rewrite its password (no probe either)."""
    dom = h.cloud.add("domain", name="service", enabled=True).id
    existing = h.cloud.add("user", name="cinder", domain_id=dom, enabled=True)
    h.cloud.passwords[existing.id] = "theirs"
    h.cloud.secrets["ns/cinder-pw/OS_PASSWORD"] = "attacker"
    wf = await h.apply("User", USER)
    cond = await ready(h, wf)
    assert cond["reason"] == "Adopted" and "password not managed" in cond["message"]
    await h.env.sleep(601)  # not on the resync either
    assert h.cloud.passwords[existing.id] == "theirs"
    assert h.cloud.count(io.PROBE_PASSWORD.name) == 0 and h.cloud.count(io.SET_PASSWORD.name) == 0


# --- protected -------------------------------------------------------------------------------------------


async def test_row_protected_is_never_written_nor_deleted(h: Harness) -> None:
    h.cloud.add("role", name="admin")
    h.cloud.add("service", name="keystone", type="identity", description="the catalog's", enabled=True)
    role = await h.apply("Role", {"name": "admin"} | DELETE, name="r", finalizers=[FINALIZER])
    svc_spec = {"name": "keystone", "type": "identity", "description": "hijack"} | DELETE
    svc = await h.apply("Service", svc_spec, name="s", finalizers=[FINALIZER])
    assert "protected" in (await ready(h, role))["message"]
    assert "protected (the identity service)" in (await ready(h, svc))["message"]
    await delete(h, role, {"name": "admin"} | DELETE)
    await delete(h, svc, svc_spec)
    assert [r.fields["name"] for r in h.cloud.of("role")] == ["admin"]
    assert h.cloud.of("service")[0].fields["description"] == "the catalog's"
    assert h.cloud.count(io.UPDATE.name) == 0 and h.cloud.count(io.DELETE.name) == 0


async def test_the_controllers_own_user_is_protected(h: Harness) -> None:
    dom = h.cloud.add("domain", name="Default", enabled=True).id
    me = h.cloud.add("user", name="osprov", domain_id=dom, enabled=True)
    h.cloud.passwords[me.id] = "controller"
    h.cloud.controller = {"user/Default/osprov": "the controller's own user"}
    h.cloud.secrets["ns/pw/OS_PASSWORD"] = "attacker"
    wf = await h.apply("User", {"name": "osprov", "domain": "Default", "passwordSecret": {"name": "pw"}})
    assert "protected (the controller's own user)" in (await ready(h, wf))["message"]
    assert h.cloud.passwords[me.id] == "controller" and h.cloud.count(io.PROBE_PASSWORD.name) == 0


def _grant(role: str, user: str, project: str) -> ObjectKey:
    return ObjectKey(
        kind="grant",
        role=ObjectKey(kind="role", name=role),
        subject=ObjectKey(kind="user", domain="Default", name=user),
        scope=ObjectKey(kind="project", domain="Default", name=project),
    )


def test_a_grant_to_the_controllers_user_needs_the_operators_allow_list(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A resource author cannot widen the controller's power (member on a project of their choosing);
    the operator can, per grant (the local stack allows the member roles: DEV_CONTROLLER_GRANTS)."""
    me = {"user/Default/admin": "the controller's own user"}
    member = _grant("member", "admin", "tenant-x")
    assert policy_for(member, me).protected
    assert "it grants a role to the bootstrap admin user" in policy_for(member, me).reason
    monkeypatch.setenv("OSPROV_OWNERSHIP_ALLOW", DEV_CONTROLLER_GRANTS)
    assert not policy_for(member, me).protected and policy_for(member, me).allowed
    assert policy_for(_grant("admin", "admin", "tenant-x"), me).protected  # not the roles allowed
    assert not policy_for(_grant("member", "nova", "tenant-x"), me).allowed  # other users: the usual rules
    monkeypatch.setenv("OSPROV_OWNERSHIP_DENY", "grant/*tenant-x")
    assert policy_for(member, me).protected  # the operator's deny-list still wins


# --- grants ------------------------------------------------------------------------------------------------


def _grant_spec(role: str) -> dict[str, Any]:
    return {
        "role": {"name": role},
        "user": {"name": "cinder", "domain": "service"},
        "project": {"name": "service", "domain": "service"},
    } | DELETE


async def test_a_grant_that_existed_is_never_revoked_and_one_osprov_made_is(h: Harness) -> None:
    dom = h.cloud.add("domain", name="service", enabled=True).id
    member = h.cloud.add("role", name="member")
    h.cloud.add("role", name="reader")
    user = h.cloud.add("user", name="cinder", domain_id=dom)
    proj = h.cloud.add("project", name="service", domain_id=dom)
    old = io.Grant(role_id=member.id, user_id=user.id, project_id=proj.id)
    h.cloud.grants.add(old.model_dump_json())
    existing = await h.apply("RoleAssignment", _grant_spec("member"), name="old", finalizers=[FINALIZER])
    made = await h.apply("RoleAssignment", _grant_spec("reader"), name="new", finalizers=[FINALIZER])
    assert (await ready(h, existing))["reason"] == "Adopted"
    assert (await ready(h, made))["reason"] == "Reconciled"
    await delete(h, existing, _grant_spec("member"))
    await delete(h, made, _grant_spec("reader"))
    assert h.cloud.grants == {old.model_dump_json()}


# --- conflicts -------------------------------------------------------------------------------------------


async def test_two_users_with_different_secrets_conflict_instead_of_fighting(h: Harness) -> None:
    """Item 4: the later resource is told Conflict; no flapping writes, no failed logins."""
    h.cloud.add("domain", name="service", enabled=True)
    h.cloud.secrets["ns/a-pw/OS_PASSWORD"] = "a"
    h.cloud.secrets["ns/b-pw/OS_PASSWORD"] = "b"
    a = await h.apply("User", USER | {"passwordSecret": {"name": "a-pw"}}, name="a")
    await ready(h, a)
    b = await h.apply("User", USER | {"passwordSecret": {"name": "b-pw"}}, name="b")
    cond = await ready(h, b)
    assert (cond["status"], cond["reason"]) == ("False", "Conflict")
    assert "User ns/a already declares user cinder" in cond["message"] and "passwordSecret" in cond["message"]
    await h.env.sleep(1201)  # two resyncs
    [user] = h.cloud.of("user")
    assert h.cloud.passwords[user.id] == "a" and h.cloud.count(io.SET_PASSWORD.name) == 1
