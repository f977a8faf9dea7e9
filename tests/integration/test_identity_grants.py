"""Groups and RoleAssignments on the real Keystone: every subject × scope, system scope, drift repair.

Grants are checked with Keystone's own grant API (HEAD on the grant's path) through an independent
admin client. The role is unique per run, so a system-scope grant gives the test user nothing real.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from openstack.identity.v3._proxy import Proxy as Identity

from devenv.testing import StackEnv
from tests.integration.test_identity_support import (
    Passwords,
    assert_no_leaks,
    identity_client,
    keystone_domain_id,
    now,
    ready_status,
    uniq,
    wait_condition,
)
from tests.support.osprov import Osprov, run_osprov
from tests.support.waiting import wait_for

pytestmark = pytest.mark.stack

STARTED = now()
PASSWORDS = Passwords()


@pytest.fixture(scope="module")
def osprov(identity_stack: StackEnv, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Osprov]:
    yield from run_osprov(identity_stack, tmp_path_factory.mktemp("identity-grants"), resync_seconds=2)


@pytest.fixture(scope="module")
def ks(identity_stack: StackEnv) -> Iterator[Identity]:
    yield from identity_client(identity_stack)


@dataclass(frozen=True)
class World:
    """Names (in the resources) and IDs (in Keystone) of what the grants refer to."""

    domain: str
    role: str
    user: str
    group: str
    project: str
    ids: dict[str, str]


@pytest.fixture(scope="module")
def world(osprov: Osprov, ks: Identity) -> Iterator[World]:
    domain, role = uniq("grants"), uniq("grant-role")
    osprov.apply("Domain", "d", {"name": domain})
    osprov.apply("Role", "r", {"name": role})
    osprov.apply("Project", "p", {"name": "proj", "domain": domain})
    osprov.apply("Group", "g", {"name": "team", "domain": domain, "description": "a group"})
    osprov.create_secret("u-pw", {"OS_PASSWORD": PASSWORDS.new()})
    osprov.apply("User", "u", {"name": "member", "domain": domain, "passwordSecret": {"name": "u-pw"}})
    ids = {
        "domain": ready_status(osprov, "Domain", "d")["domainID"],
        "role": ready_status(osprov, "Role", "r")["roleID"],
        "project": ready_status(osprov, "Project", "p")["projectID"],
        "group": ready_status(osprov, "Group", "g")["groupID"],
        "user": ready_status(osprov, "User", "u")["userID"],
    }
    yield World(domain, role, "member", "team", "proj", ids)
    ks.delete_role(ids["role"], ignore_missing=True)  # revokes every grant of the role, system ones too
    ks.update_domain(ids["domain"], enabled=False)
    ks.delete_domain(ids["domain"], ignore_missing=True)


def grant_path(w: World, subject: str, scope: str) -> str:
    where = "/system" if scope == "system" else f"/{scope}s/{w.ids[scope]}"
    return f"{where}/{subject}s/{w.ids[subject]}/roles/{w.ids['role']}"


def has_grant(ks: Identity, path: str) -> bool:
    status = ks.head(path).status_code
    assert status in (204, 404), f"HEAD {path}: {status}"
    return status == 204


def assignment_spec(w: World, subject: str, scope: str) -> dict[str, object]:
    spec: dict[str, object] = {
        "role": {"name": w.role},
        subject: {"name": getattr(w, subject), "domain": w.domain},
    }
    if scope == "project":
        spec["project"] = {"name": w.project, "domain": w.domain}
    elif scope == "domain":
        spec["domain"] = {"name": w.domain}
    else:
        spec["system"] = "all"
    return spec


COMBINATIONS = [(s, c) for s in ("user", "group") for c in ("project", "domain", "system")]


def test_group_is_created_in_its_domain(ks: Identity, world: World) -> None:
    group = ks.get_group(world.ids["group"])
    assert group.name == "team" and group.domain_id == world.ids["domain"] and group.description == "a group"


def test_every_subject_and_scope_is_granted_in_keystone(osprov: Osprov, ks: Identity, world: World) -> None:
    for subject, scope in COMBINATIONS:
        assert not has_grant(ks, grant_path(world, subject, scope))
        osprov.apply("RoleAssignment", f"{subject}-{scope}", assignment_spec(world, subject, scope))
    for subject, scope in COMBINATIONS:
        cond = ready_status(osprov, "RoleAssignment", f"{subject}-{scope}")["conditions"][0]
        assert world.role in cond["message"]
        assert has_grant(ks, grant_path(world, subject, scope)), f"{subject} on {scope} not granted"


def test_grant_revoked_by_hand_is_restored_by_the_resync(osprov: Osprov, ks: Identity, world: World) -> None:
    osprov.apply("RoleAssignment", "drift", assignment_spec(world, "user", "project"))
    osprov.wait_ready("RoleAssignment", "drift")
    path = grant_path(world, "user", "project")
    assert ks.delete(path).status_code == 204
    wait_for(lambda: has_grant(ks, path), "the resync restores the revoked grant", 60)


def test_assignment_to_a_missing_subject_says_what_to_create(
    osprov: Osprov, ks: Identity, world: World
) -> None:
    spec = assignment_spec(world, "user", "domain") | {"user": {"name": "nobody", "domain": world.domain}}
    osprov.apply("RoleAssignment", "orphan", spec)
    cond = wait_condition(osprov, "RoleAssignment", "orphan", lambda c: c["status"] == "False", "failing")
    assert (
        cond["status"] == "False"
        and "user 'nobody'" in cond["message"]
        and "does not exist" in cond["message"]
    )
    assert ks.find_user("nobody", domain_id=keystone_domain_id(ks, world.domain)) is None


def test_zz_no_test_password_in_histories_logs_or_status(osprov: Osprov) -> None:
    """Runs last in this module: everything the module made is scanned."""
    assert assert_no_leaks(osprov, PASSWORDS, STARTED) > 50
