"""Tenancy on the real Keystone: a namespace acts only through what the operator's mapping gives it.

One controller serves two namespaces, A and B. The mapping (the worker's OSPROV_TENANCY_FILE) gives A a
managed domain for its Identities and one existing project; B gets nothing. The identity-only stack is
enough: every refusal happens before any cloud call, and an Identity is Keystone objects plus a Secret.
Before the Identity kind, spec.project was free text: a Volume of any namespace was made in whatever
project it named, on the controller's credentials.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes.client
import pytest
import yaml
from keystoneauth1 import exceptions as ks_exceptions
from keystoneauth1 import session as ksa_session
from keystoneauth1.identity import v3
from openstack.identity.v3._proxy import Proxy as Identity

from devenv.testing import StackEnv
from osprov.api import cinder_io
from osprov.api.identity import object_name
from tests.integration.test_identity_support import (
    activity_runs,
    identity_client,
    status_of,
    uniq,
    wait_condition,
    workflow_id,
)
from tests.support.osprov import Osprov, admin_connection, run_osprov
from tests.support.waiting import wait_for

pytestmark = pytest.mark.stack

AVAILABLE = "Available"


@pytest.fixture(scope="module")
def ks(identity_stack: StackEnv) -> Iterator[Identity]:
    yield from identity_client(identity_stack)


@pytest.fixture(scope="module")
def tenancy_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("tenancy") / "tenancy.yaml"


@pytest.fixture(scope="module")
def osprov(
    identity_stack: StackEnv, tmp_path_factory: pytest.TempPathFactory, tenancy_file: Path
) -> Iterator[Osprov]:
    yield from run_osprov(
        identity_stack,
        tmp_path_factory.mktemp("tenancy-run"),
        resync_seconds=600,
        extra_env={"OSPROV_TENANCY_FILE": str(tenancy_file)},
        extra_namespaces=1,
    )


@pytest.fixture(scope="module")
def world(osprov: Osprov, ks: Identity, tenancy_file: Path) -> Iterator[dict[str, Any]]:
    """The managed domain, A's mapped project and another tenant's project; the mapping names them.

    Written after the worker started (the namespaces' names are made by run_osprov): the worker re-reads
    the file when it changes, and no resource exists before this."""
    member = ks.find_role("member")
    assert member is not None, "the local Keystone has the member role"
    domain = ks.create_domain(name=uniq("tenants"), enabled=True)
    mine = ks.create_project(name=uniq("legacy-a"), domain_id="default")
    victim = ks.create_project(name=uniq("victim"), domain_id="default")
    a, b = osprov.namespaces
    mapping = {
        "roles": ["member"],
        "namespaces": {
            a.namespace: {"domain": domain.name, "projects": [{"name": mine.name, "domain": "Default"}]}
        },
    }
    tenancy_file.write_text(yaml.safe_dump(mapping))
    yield {"a": a, "b": b, "domain": domain, "mine": mine, "victim": victim, "member": member}
    for project in (mine, victim):
        ks.delete_project(project, ignore_missing=True)
    ks.update_domain(domain, enabled=False)
    ks.delete_domain(domain, ignore_missing=True)


def forbidden(o: Osprov, kind: str, name: str) -> dict[str, Any]:
    ctype = AVAILABLE if kind != "Identity" else "Ready"
    cond = wait_for(
        lambda: c if (c := o.condition(kind, name, ctype)) and c["status"] == "False" else None,
        f"{kind} {name} refused",
        60,
    )
    assert cond["reason"] == "Forbidden", cond
    return dict(cond)


def gone(o: Osprov, kind: str, name: str) -> None:
    o.delete(kind, name)
    wait_for(lambda: o.get(kind, name) is None, f"{kind} {name} deleted")


def volume(project: Any) -> dict[str, Any]:
    return {"project": {"name": project.name, "domain": "Default"}, "size": 1, "deletionPolicy": "delete"}


def test_a_resource_cannot_act_in_a_project_its_namespace_was_not_given(
    world: dict[str, Any], identity_stack: StackEnv
) -> None:
    a, b, victim, mine = world["a"], world["b"], world["victim"], world["mine"]
    a.apply("Volume", "steal", volume(victim))
    b.apply("Volume", "borrow", volume(mine))  # A's project, named from B
    for o, name, project in ((a, "steal", victim), (b, "borrow", mine)):
        cond = forbidden(o, "Volume", name)
        assert project.name in cond["message"] and o.namespace in cond["message"]
        wid = workflow_id(o, "Volume", name)
        assert activity_runs(identity_stack, wid, cinder_io.FIND_VOLUMES.name) == 0
        assert activity_runs(identity_stack, wid, cinder_io.CREATE_VOLUME.name) == 0
    # Refused resources delete at once: nothing was made, nothing is called.
    for o, name in ((a, "steal"), (b, "borrow")):
        gone(o, "Volume", name)


def test_an_identity_gets_its_own_project_user_and_credential(
    world: dict[str, Any], ks: Identity, identity_stack: StackEnv
) -> None:
    a = world["a"]
    a.apply("Identity", "team", {})
    status = a.wait_ready("Identity", "team", timeout_s=60)["status"]
    uid = a.get("Identity", "team")["metadata"]["uid"]  # type: ignore[index]
    project = ks.get_project(status["projectID"])
    assert project.name == object_name(uid) and project.domain_id == world["domain"].id
    assert [
        r.role["id"] for r in ks.role_assignments(user_id=status["userID"], scope_project_id=project.id)
    ] == [world["member"].id]
    # The published credential authenticates as the Identity's user, scoped to its project only.
    secret = kubernetes.client.CoreV1Api(a.kube).read_namespaced_secret(status["secretName"], a.namespace)
    data = {k: base64.b64decode(v).decode() for k, v in (secret.data or {}).items()}
    admin = admin_connection(identity_stack)
    auth = v3.ApplicationCredential(
        auth_url=admin.config.config["auth"]["auth_url"],
        application_credential_id=data["OS_APPLICATION_CREDENTIAL_ID"],
        application_credential_secret=data["OS_APPLICATION_CREDENTIAL_SECRET"],
    )
    session = ksa_session.Session(auth=auth, verify=False)
    assert session.get_project_id() == project.id
    assert session.get_user_id() == status["userID"] != admin.current_user_id
    admin.close()


def published(o: Osprov, secret_name: str) -> dict[str, str]:
    secret = kubernetes.client.CoreV1Api(o.kube).read_namespaced_secret(secret_name, o.namespace)
    return {k: base64.b64decode(v).decode() for k, v in (secret.data or {}).items()}


def scope_of(stack: StackEnv, data: dict[str, str]) -> str | None:
    """The project a fresh token of this application credential is scoped to; None when Keystone refuses it."""
    auth = v3.ApplicationCredential(
        auth_url=stack.keystone_url,
        application_credential_id=data["OS_APPLICATION_CREDENTIAL_ID"],
        application_credential_secret=data["OS_APPLICATION_CREDENTIAL_SECRET"],
    )
    try:
        return str(ksa_session.Session(auth=auth, verify=False).get_project_id())
    except (ks_exceptions.Unauthorized, ks_exceptions.NotFound):  # a deleted one is "not found"
        return None


def test_an_identity_rotates_its_credential_before_expiry_and_revokes_the_old_one_after_the_overlap(
    world: dict[str, Any], identity_stack: StackEnv
) -> None:
    """Rows I6 and I7 on the real Keystone: the next credential is in the Secret while the current one still
    works (no moment without a working credential), and the old one stops working `overlap` later."""
    a = world["a"]
    credential = {"lifetime": "1m", "rotateBefore": "50s", "overlap": "20s"}  # rotation 10 s after issue
    a.apply("Identity", "rotating", {"credential": credential})
    status = a.wait_ready("Identity", "rotating", timeout_s=60)["status"]
    first = published(a, status["secretName"])
    assert scope_of(identity_stack, first) == status["projectID"]
    second = wait_for(
        lambda: (
            d
            if (d := published(a, status["secretName"]))["OS_APPLICATION_CREDENTIAL_ID"]
            != first["OS_APPLICATION_CREDENTIAL_ID"]
            else None
        ),
        "the next credential published",
        90,
    )
    assert scope_of(identity_stack, second) == status["projectID"]
    assert scope_of(identity_stack, first) == status["projectID"]  # the overlap: both work for now
    wait_for(lambda: scope_of(identity_stack, first) is None, "the old credential revoked", 90)
    assert status_of(a, "Identity", "rotating")["credentialID"] != first["OS_APPLICATION_CREDENTIAL_ID"]
    gone(a, "Identity", "rotating")


def test_namespace_b_can_neither_use_a_identity_nor_make_one(world: dict[str, Any]) -> None:
    b = world["b"]
    b.apply("Volume", "foreign", {"identityRef": {"name": "team"}, "size": 1})
    cond = wait_for(
        lambda: c if (c := b.condition("Volume", "foreign", AVAILABLE)) and c["status"] == "False" else None,
        "Volume foreign waits",
        60,
    )
    assert f"Identity team does not exist in namespace {b.namespace}" in cond["message"]
    b.apply("Identity", "own", {})
    assert "an operator must map a managed Keystone domain" in forbidden(b, "Identity", "own")["message"]
    assert status_of(b, "Identity", "own").get("projectID") is None
    for kind, name in (("Volume", "foreign"), ("Identity", "own")):
        gone(b, kind, name)


def test_deleting_an_identity_in_use_waits_then_removes_everything(
    world: dict[str, Any], ks: Identity
) -> None:
    a = world["a"]
    status = a.wait_ready("Identity", "team", timeout_s=60)["status"]
    a.apply("Volume", "user", {"identityRef": {"name": "team"}, "size": 1})  # retain: no delete call needed
    wait_for(lambda: status_of(a, "Identity", "team").get("users") == ["Volume/user"], "the volume uses it")
    a.delete("Identity", "team")
    cond = wait_condition(a, "Identity", "team", lambda c: c["reason"] == "InUse", "deletion guard")
    assert "Volume/user" in cond["message"]
    assert ks.find_project(status["projectID"], ignore_missing=True) is not None
    a.delete("Volume", "user")
    wait_for(lambda: a.get("Identity", "team") is None, "Identity gone", 60)
    assert ks.find_project(status["projectID"], ignore_missing=True) is None
    assert ks.find_user(status["userID"], ignore_missing=True) is None
