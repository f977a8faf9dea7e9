"""deletionPolicy and keystoneRef on the real Keystone.

delete: a finalizer is added, the object is deleted by the ID osprov recorded (never by a query),
then the finalizer goes; an object already gone counts as deleted. retain (the default): no
finalizer, Keystone untouched. keystoneRef naming another deployment: no status, no Keystone call,
only our finalizer removed. The resync is long here so nothing re-adopts between a hand-made change
and the deletion being tested.
"""

from __future__ import annotations

from collections.abc import Iterator

import openstack.exceptions
import pytest
from kubernetes.client.exceptions import ApiException
from openstack.identity.v3._proxy import Proxy as Identity

from devenv.testing import StackEnv
from osprov.api.registry import kind_info
from tests.integration.test_identity_support import (
    Passwords,
    activity_runs,
    assert_no_leaks,
    identity_client,
    now,
    ready_status,
    uniq,
    workflow_id,
)
from tests.support.osprov import Osprov, run_osprov
from tests.support.waiting import wait_for

pytestmark = pytest.mark.stack

STARTED = now()
PASSWORDS = Passwords()
FINALIZER = "keystone.osh.openstack.org/finalizer"


@pytest.fixture(scope="module")
def osprov(identity_stack: StackEnv, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Osprov]:
    yield from run_osprov(identity_stack, tmp_path_factory.mktemp("identity-deletion"), resync_seconds=600)


@pytest.fixture(scope="module")
def ks(identity_stack: StackEnv) -> Iterator[Identity]:
    yield from identity_client(identity_stack)


@pytest.fixture(scope="module")
def domain(osprov: Osprov, ks: Identity) -> Iterator[tuple[str, str]]:
    name = uniq("deletion")
    osprov.apply("Domain", "d", {"name": name})
    domain_id = str(ready_status(osprov, "Domain", "d")["domainID"])
    yield name, domain_id
    ks.update_domain(domain_id, enabled=False)
    ks.delete_domain(domain_id, ignore_missing=True)


def finalizers(osprov: Osprov, kind: str, name: str) -> list[str]:
    return list(((osprov.get(kind, name) or {}).get("metadata") or {}).get("finalizers") or [])


def gone(osprov: Osprov, kind: str, name: str) -> bool:
    return osprov.get(kind, name) is None


def project_exists(ks: Identity, project_id: str) -> bool:
    try:
        ks.get_project(project_id)
    except openstack.exceptions.NotFoundException:
        return False
    return True


def test_delete_policy_deletes_by_the_stored_id_not_by_name(
    osprov: Osprov, ks: Identity, domain: tuple[str, str]
) -> None:
    name, domain_id = domain
    osprov.apply("Project", "doomed", {"name": "doomed", "domain": name, "deletionPolicy": "delete"})
    ours = ready_status(osprov, "Project", "doomed")["projectID"]
    assert FINALIZER in finalizers(osprov, "Project", "doomed")
    # By hand: ours is renamed, and someone else's project takes the name. A delete by query would
    # remove theirs and miss ours.
    ks.update_project(ours, name="doomed-renamed")
    theirs = ks.create_project(name="doomed", domain_id=domain_id).id
    osprov.delete("Project", "doomed")
    wait_for(lambda: gone(osprov, "Project", "doomed"), "the resource deleted once its finalizer went", 60)
    assert not project_exists(ks, ours), "the recorded project was not deleted"
    assert project_exists(ks, theirs), "a same-named project that is not ours was deleted"


def test_object_already_gone_counts_as_deleted(osprov: Osprov, ks: Identity) -> None:
    role = uniq("gone-role")
    osprov.apply("Role", "vanished", {"name": role, "deletionPolicy": "delete"})
    role_id = ready_status(osprov, "Role", "vanished")["roleID"]
    ks.delete_role(role_id)
    osprov.delete("Role", "vanished")
    wait_for(
        lambda: gone(osprov, "Role", "vanished"), "the resource deleted although Keystone's role was gone", 60
    )


def test_delete_policy_on_an_assignment_revokes_the_grant(
    osprov: Osprov, ks: Identity, domain: tuple[str, str]
) -> None:
    name, domain_id = domain
    role = uniq("revoked-role")
    osprov.apply("Role", "revoked", {"name": role})
    role_id = ready_status(osprov, "Role", "revoked")["roleID"]
    osprov.apply("Group", "revokers", {"name": "revokers", "domain": name})
    group_id = ready_status(osprov, "Group", "revokers")["groupID"]
    spec = {"role": {"name": role}, "group": {"name": "revokers", "domain": name}, "domain": {"name": name}}
    osprov.apply("RoleAssignment", "revoke-me", spec | {"deletionPolicy": "delete"})
    osprov.wait_ready("RoleAssignment", "revoke-me")
    path = f"/domains/{domain_id}/groups/{group_id}/roles/{role_id}"
    assert ks.head(path).status_code == 204
    assert FINALIZER in finalizers(osprov, "RoleAssignment", "revoke-me")
    osprov.delete("RoleAssignment", "revoke-me")
    wait_for(lambda: gone(osprov, "RoleAssignment", "revoke-me"), "the assignment resource deleted", 60)
    assert ks.head(path).status_code == 404, "the grant was not revoked"
    assert ks.get_role(role_id).id == role_id and ks.get_group(group_id).id == group_id
    ks.delete_role(role_id)


def test_moving_a_grant_is_refused_and_delete_policy_revokes_the_grant_osprov_made(
    osprov: Osprov, ks: Identity, domain: tuple[str, str]
) -> None:
    """A RoleAssignment's role, subject and scope identify its grant: changing one is refused at admission
    (it used to re-target the resource and orphan the grant). Deleting it revokes the grant osprov made."""
    name, domain_id = domain
    first, second = uniq("first-role"), uniq("second-role")
    osprov.apply("Role", "first", {"name": first})
    osprov.apply("Role", "second", {"name": second})
    osprov.apply("Group", "movers", {"name": "movers", "domain": name})
    ids = {r: ready_status(osprov, "Role", r)["roleID"] for r in ("first", "second")}
    group_id = ready_status(osprov, "Group", "movers")["groupID"]
    spec = {"group": {"name": "movers", "domain": name}, "domain": {"name": name}, "deletionPolicy": "delete"}
    osprov.apply("RoleAssignment", "mover", spec | {"role": {"name": first}})
    osprov.wait_ready("RoleAssignment", "mover")
    with pytest.raises(ApiException) as err:
        osprov.apply("RoleAssignment", "mover", spec | {"role": {"name": second}})
    assert err.value.status == 422 and "spec.role is immutable" in str(err.value.body)
    path = f"/domains/{domain_id}/groups/{group_id}/roles/{{}}"
    assert ks.head(path.format(ids["first"])).status_code == 204
    assert ks.head(path.format(ids["second"])).status_code == 404
    osprov.delete("RoleAssignment", "mover")
    wait_for(lambda: gone(osprov, "RoleAssignment", "mover"), "the assignment resource deleted", 60)
    assert ks.head(path.format(ids["first"])).status_code == 404
    for role_id in ids.values():
        ks.delete_role(role_id)


def test_retain_adds_no_finalizer_and_touches_nothing(
    osprov: Osprov, ks: Identity, domain: tuple[str, str]
) -> None:
    name, domain_id = domain
    osprov.create_secret("kept-pw", {"OS_PASSWORD": PASSWORDS.new()})
    osprov.apply("User", "kept", {"name": "kept", "domain": name, "passwordSecret": {"name": "kept-pw"}})
    osprov.apply(
        "RoleAssignment",
        "kept",
        {"role": {"name": "member"}, "user": {"name": "kept", "domain": name}, "domain": {"name": name}},
    )
    user_id = ready_status(osprov, "User", "kept")["userID"]
    osprov.wait_ready("RoleAssignment", "kept")
    member = next(r for r in ks.roles(name="member") if r.name == "member").id
    path = f"/domains/{domain_id}/users/{user_id}/roles/{member}"
    assert finalizers(osprov, "User", "kept") == [] and finalizers(osprov, "RoleAssignment", "kept") == []
    wf_user, wf_grant = workflow_id(osprov, "User", "kept"), workflow_id(osprov, "RoleAssignment", "kept")
    osprov.delete("RoleAssignment", "kept")
    osprov.delete("User", "kept")
    assert gone(osprov, "User", "kept") and gone(osprov, "RoleAssignment", "kept")  # no finalizer held them
    for wf in (wf_user, wf_grant):
        assert activity_runs(osprov.stack, wf, "keystone.find") > 0  # the workflow did run
        assert activity_runs(osprov.stack, wf, "keystone.delete") == 0
        assert activity_runs(osprov.stack, wf, "keystone.revoke_grant") == 0
    assert ks.get_user(user_id).name == "kept" and ks.head(path).status_code == 204


def test_another_deployments_resource_is_ignored_but_our_finalizer_removed(
    osprov: Osprov, ks: Identity
) -> None:
    info = kind_info("Domain")
    foreign = uniq("foreign")
    body = {
        "apiVersion": info.api_version,
        "kind": "Domain",
        "metadata": {"name": "foreign", "finalizers": [FINALIZER, "example.com/keep"]},
        "spec": {"name": foreign, "keystoneRef": {"name": "another-keystone"}, "deletionPolicy": "delete"},
    }
    osprov.custom.create_namespaced_custom_object(
        info.group, info.version, osprov.namespace, info.plural, body
    )
    wait_for(
        lambda: finalizers(osprov, "Domain", "foreign") == ["example.com/keep"], "our finalizer removed", 60
    )
    obj = osprov.get("Domain", "foreign") or {}
    assert not obj.get("status"), f"status written for another deployment's resource: {obj.get('status')}"
    assert ks.find_domain(foreign) is None
    wf = workflow_id(osprov, "Domain", "foreign")
    assert activity_runs(osprov.stack, wf, "keystone.find") == 0
    assert activity_runs(osprov.stack, wf, "keystone.create") == 0
    # Clean up: our part is done, the other controller's finalizer is the test's to drop.
    osprov.custom.patch_namespaced_custom_object(
        info.group,
        info.version,
        osprov.namespace,
        info.plural,
        "foreign",
        {"metadata": {"finalizers": None}},
        _content_type="application/merge-patch+json",
    )


def test_zz_no_test_password_in_histories_logs_or_status(osprov: Osprov) -> None:
    """Runs last in this module: everything the module made is scanned."""
    assert assert_no_leaks(osprov, PASSWORDS, STARTED) > 20
