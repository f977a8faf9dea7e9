"""Issue 12's attacks on the real Keystone, as an author of resources in one served namespace would try them.

Every test reproduces one item of the issue and checks Keystone's own record that it no longer happens.
Each one fails on release 0.1 (commit f3bfa8b), which adopted whatever existed under a name and then
rewrote, re-passworded and deleted it: the assertion named in each docstring is the one 0.1 fails.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from keystoneauth1 import session as ksa_session
from keystoneauth1.identity import v3
from kubernetes.client.exceptions import ApiException
from temporalio.client import Client
from temporalio.service import RPCError

from devenv.config import load_secrets
from devenv.openstack.common import REGION
from devenv.testing import StackEnv
from tests.integration.test_identity_support import (
    entity_state,
    identity_client,
    login_record,
    sweep_ticks,
    uniq,
    wait_condition,
    workflow_id,
)
from tests.support.osprov import Osprov, ensure_crd, run_osprov
from tests.support.waiting import wait_for

pytestmark = pytest.mark.stack

Identity = Any
DELETE = {"deletionPolicy": "delete"}


@pytest.fixture(scope="module")
def osprov(identity_stack: StackEnv, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Osprov]:
    tmp: Path = tmp_path_factory.mktemp("ownership")
    yield from run_osprov(identity_stack, tmp, resync_seconds=3, extra_namespaces=1)


@pytest.fixture(scope="module")
def ks(identity_stack: StackEnv) -> Iterator[Identity]:
    yield from identity_client(identity_stack)


def adopted(osprov: Osprov, kind: str, name: str) -> dict[str, Any]:
    """The Ready condition once the object's workflow answered: True, and osprov only reads the object."""
    return wait_condition(osprov, kind, name, lambda c: c.get("reason") == "Adopted", "adopted read-only")


def deleted(osprov: Osprov, kind: str, name: str) -> None:
    osprov.delete(kind, name)
    wait_for(lambda: osprov.get(kind, name) is None, f"{kind} {name} gone (finalizer released)", 90)


def authenticates(stack: StackEnv, user: str, password: str) -> bool:
    auth = v3.Password(
        auth_url=stack.keystone_url,  # the Identity v3 root
        username=user,
        user_domain_name="Default",
        password=password,
        unscoped=True,
    )
    try:
        auth.get_access(ksa_session.Session(auth=auth))
    except Exception:
        return False
    return True


# --- item 1: a User named like an existing user ---------------------------------------------------------


def test_item1_a_user_named_admin_never_rewrites_the_admin_password(
    osprov: Osprov, ks: Identity, identity_stack: StackEnv
) -> None:
    """0.1 probed the admin user with the author's Secret (a failed login), then wrote it as admin's password."""
    admin = ks.find_user("admin", domain_id="default")
    before = login_record(admin.id)
    osprov.create_secret("admin-pw", {"OS_PASSWORD": "attacker-" + uuid.uuid4().hex})
    spec = {"name": "admin", "domain": "Default", "passwordSecret": {"name": "admin-pw"}} | DELETE
    osprov.apply("User", "admin", spec)
    cond = adopted(osprov, "User", "admin")
    assert "protected" in cond["message"]
    wait_for(lambda: _resynced(osprov, "User", "admin"), "a resync of the User", 60)
    assert authenticates(identity_stack, "admin", load_secrets().admin_password)
    after = login_record(admin.id)
    assert (after.failed_auth_count, after.password_row) == (before.failed_auth_count, before.password_row)
    deleted(osprov, "User", "admin")
    assert ks.find_user("admin", domain_id="default") is not None


def test_item1_an_existing_user_gets_no_password_from_a_resource(osprov: Osprov, ks: Identity) -> None:
    """0.1 wrote the resource's Secret as the password of a user it found (and probed it first)."""
    victim = ks.create_user(name=uniq("victim"), domain_id="default", password="theirs-" + uuid.uuid4().hex)
    before = login_record(victim.id)
    osprov.create_secret("victim-pw", {"OS_PASSWORD": "attacker-" + uuid.uuid4().hex})
    osprov.apply(
        "User", "victim", {"name": victim.name, "domain": "Default", "passwordSecret": {"name": "victim-pw"}}
    )
    cond = adopted(osprov, "User", "victim")
    assert "password not managed" in cond["message"]
    wait_for(lambda: _resynced(osprov, "User", "victim"), "a resync of the User", 60)
    after = login_record(victim.id)
    assert (after.failed_auth_count, after.password_row) == (before.failed_auth_count, before.password_row)
    ks.delete_user(victim.id)


# --- item 2: deleting a resource deleted what it had adopted --------------------------------------------


def test_item2_admin_project_role_and_the_bootstrap_grant_survive_delete_policy(
    osprov: Osprov, ks: Identity
) -> None:
    """0.1 deleted the admin project and the admin role, and revoked the bootstrap admin grant."""
    admin_user = ks.find_user("admin", domain_id="default")
    admin_project = ks.find_project("admin", domain_id="default")
    admin_role = ks.find_role("admin")
    osprov.apply("Project", "adm-project", {"name": "admin", "domain": "Default"} | DELETE)
    osprov.apply("Role", "adm-role", {"name": "admin"} | DELETE)
    grant = {
        "role": {"name": "admin"},
        "user": {"name": "admin", "domain": "Default"},
        "project": {"name": "admin", "domain": "Default"},
    }
    osprov.apply("RoleAssignment", "adm-grant", grant | DELETE)
    for kind, name in (("Project", "adm-project"), ("Role", "adm-role"), ("RoleAssignment", "adm-grant")):
        adopted(osprov, kind, name)
        deleted(osprov, kind, name)
    assert ks.get_project(admin_project.id).id == admin_project.id
    assert ks.get_role(admin_role.id).id == admin_role.id
    assert _has_grant(ks, admin_project.id, admin_user.id, admin_role.id)


def test_item2_a_project_made_by_hand_is_not_deleted_with_the_resource(osprov: Osprov, ks: Identity) -> None:
    """0.1 adopted the existing project and deleted it when the resource (deletionPolicy delete) went."""
    project = ks.create_project(name=uniq("handmade"), domain_id="default", description="by hand")
    osprov.apply(
        "Project", "handmade", {"name": project.name, "domain": "Default", "description": "x"} | DELETE
    )
    assert "description" in adopted(osprov, "Project", "handmade")["message"]  # drift shown, not written
    deleted(osprov, "Project", "handmade")
    kept = ks.get_project(project.id)
    assert kept.description == "by hand"
    ks.delete_project(project.id)


# --- item 3: drift repair on adopted objects rewrote shared infrastructure -----------------------------


def test_item3_the_identity_endpoint_is_never_repointed(osprov: Osprov, ks: Identity) -> None:
    """0.1 PATCHed the catalog's public identity URL to the resource's (a catalog hijack)."""
    service = next(s for s in ks.services() if s.type == "identity")
    before = {(e.interface, e.url) for e in ks.endpoints(service_id=service.id, region_id=REGION)}
    spec = {
        "service": {"name": service.name, "type": "identity"},
        "region": REGION,
        "urls": {"public": "http://evil.example/v3"},
    }
    osprov.apply("Endpoint", "hijack", spec)
    assert "protected" in adopted(osprov, "Endpoint", "hijack")["message"]
    wait_for(lambda: _resynced(osprov, "Endpoint", "hijack"), "a resync of the Endpoint", 60)
    assert {(e.interface, e.url) for e in ks.endpoints(service_id=service.id, region_id=REGION)} == before


def test_item3_enabled_false_does_not_disable_an_existing_domain(osprov: Osprov, ks: Identity) -> None:
    """0.1 PATCHed enabled=false onto the domain it found."""
    domain = ks.create_domain(name=uniq("live"), enabled=True)
    osprov.apply("Domain", "disabler", {"name": domain.name, "enabled": False})
    adopted(osprov, "Domain", "disabler")
    wait_for(lambda: _resynced(osprov, "Domain", "disabler"), "a resync of the Domain", 60)
    assert ks.get_domain(domain.id).is_enabled
    ks.update_domain(domain.id, enabled=False)
    ks.delete_domain(domain.id)


# --- item 4: two namespaces, one Keystone object ---------------------------------------------------------


def test_item4_a_shared_object_survives_the_deletion_of_one_declaration(osprov: Osprov, ks: Identity) -> None:
    """0.1 let the namespace with deletionPolicy delete remove the domain from under the other one."""
    first, second = osprov.namespaces
    name = uniq("shared")
    first.apply("Domain", "shared", {"name": name} | DELETE)
    first.wait_ready("Domain", "shared")
    second.apply("Domain", "shared", {"name": name})
    second.wait_ready("Domain", "shared")
    deleted(first, "Domain", "shared")
    assert ks.find_domain(name) is not None
    second.wait_ready("Domain", "shared")


def test_item4_two_users_for_one_keystone_user_conflict_instead_of_fighting(
    osprov: Osprov, ks: Identity
) -> None:
    """0.1 wrote each resource's password in turn on every resync: a failed login and a write each time."""
    first, second = osprov.namespaces
    name = uniq("twin")
    first.create_secret("pw", {"OS_PASSWORD": "first-" + uuid.uuid4().hex})
    second.create_secret("pw", {"OS_PASSWORD": "second-" + uuid.uuid4().hex})
    spec = {"name": name, "domain": "Default", "passwordSecret": {"name": "pw"}}
    first.apply("User", "twin", spec)
    user_id = first.wait_ready("User", "twin")["status"]["userID"]
    baseline = login_record(user_id)
    second.apply("User", "twin", spec)
    cond = wait_condition(
        second, "User", "twin", lambda c: c.get("reason") == "Conflict", "conflict reported"
    )
    assert f"User {first.namespace}/twin already declares" in cond["message"]
    # The first (Ready) is checked by the sweep's scans, a login with its Secret each; the second (in
    # conflict, so not Ready) keeps resyncing on its own (every 3 s): a few of each.
    wait_for(lambda: _resynced(osprov, "User", "twin", times=4), "three scans", 90)
    passes = _passes(second, "User", "twin")
    wait_for(lambda: _passes(second, "User", "twin") >= passes + 3, "three resyncs of the second", 90)
    after = login_record(user_id)
    assert (after.failed_auth_count, after.password_row) == (
        baseline.failed_auth_count,
        baseline.password_row,
    )
    ks.delete_user(user_id)


# --- item 5: the identifying fields ------------------------------------------------------------------------


def test_item5_renaming_a_resource_onto_another_object_is_refused(osprov: Osprov) -> None:
    """0.1 accepted the new spec.name and re-targeted the resource onto whatever object had that name."""
    osprov.apply("Project", "renamed", {"name": uniq("mine"), "domain": "Default"})
    with pytest.raises(ApiException) as err:
        osprov.apply("Project", "renamed", {"name": "admin", "domain": "Default"})
    assert err.value.status == 422 and "spec.name is immutable" in str(err.value.body)


# --- item 6: keystoneRef -----------------------------------------------------------------------------------


def test_item6_a_volume_for_another_keystone_is_ignored(osprov: Osprov, identity_stack: StackEnv) -> None:
    """0.1's Volume ignored keystoneRef: its workflow called Cinder with this controller's credentials and
    wrote status. Now the bridge does not even start a workflow for it."""
    ensure_crd(identity_stack, "Volume")
    project = {"name": uniq("nowhere"), "domain": "Default"}
    osprov.apply("Volume", "foreign", {"keystoneRef": {"name": "another"}, "project": project, "size": 1})
    # A Volume of ours applied after it: once its workflow exists, the bridge has routed the foreign one.
    osprov.apply("Volume", "ours", {"project": project, "size": 1})
    wait_for(
        lambda: _workflow_exists(identity_stack, workflow_id(osprov, "Volume", "ours")), "ours started", 60
    )
    assert not _workflow_exists(identity_stack, workflow_id(osprov, "Volume", "foreign"))
    assert (osprov.get("Volume", "foreign") or {}).get("status") is None


# --- helpers -----------------------------------------------------------------------------------------------


def _resynced(osprov: Osprov, kind: str, name: str, times: int = 2) -> bool:
    """The drift check has looked at the resource's objects again: the Keystone sweep (which holds their
    reports) has begun `times` more scans than when this was first asked (`times` 2: one whole scan)."""
    key = (osprov.namespace, kind, name)
    ticks = sweep_ticks(osprov)
    start = _FIRST_SEEN.setdefault(key, ticks)
    return ticks >= start + times


_FIRST_SEEN: dict[tuple[str, str, str], int] = {}


def _passes(osprov: Osprov, kind: str, name: str) -> int:
    return int(entity_state(osprov, kind, name)["passes"])


def _workflow_exists(stack: StackEnv, wf_id: str) -> bool:
    async def describe() -> bool:
        client = await Client.connect(stack.temporal_address, namespace=stack.temporal_namespace)
        try:
            await client.get_workflow_handle(wf_id).describe()
        except RPCError:
            return False
        return True

    return asyncio.run(describe())


def _has_grant(ks: Identity, project_id: str, user_id: str, role_id: str) -> bool:
    response = ks.head(f"/projects/{project_id}/users/{user_id}/roles/{role_id}")
    return bool(response.status_code == 204)
