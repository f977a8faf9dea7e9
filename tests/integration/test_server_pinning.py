"""Issue 18: pinned Server creation and its placement preflight, on the real Nova and Placement.

Pinning is the operator's to allow (tenancy mapping `pinning`): without it the Server is Forbidden and Nova
has nothing. With the preflight on, a flavor whose trait:* extra spec the pinned compute node's resource
provider lacks keeps the Server waiting with a message naming the trait, and Nova has nothing; once the
operator gives the provider the trait (Placement, as admin), the server boots — on that hypervisor.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openstack.connection
import pytest
import yaml

from devenv.openstack.catalog import IMAGE_NAMES
from devenv.testing import StackEnv
from tests.support.osprov import Osprov, ensure_crd, run_osprov
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.stack, pytest.mark.fullstack]

AVAILABLE = "Available"
CONTROLLER_USER = "admin"
PLACEMENT = "1.22"


@pytest.fixture(scope="module")
def project(admin: openstack.connection.Connection) -> Iterator[str]:
    """The operator's project: the controller holds member and admin on it (admin: Nova's policy for a
    requested destination)."""
    ident: Any = admin.identity
    proj = ident.create_project(name=f"pin-{uuid.uuid4().hex[:8]}", domain_id="default")
    user = ident.find_user(CONTROLLER_USER, domain_id="default", ignore_missing=False)
    for role in ("member", "admin"):
        ident.assign_project_role_to_user(proj.id, user, ident.find_role(role, ignore_missing=False))
    yield str(proj.name)
    for server in admin.compute.servers(all_projects=True, project_id=proj.id):
        admin.compute.delete_server(server.id, ignore_missing=True)


@pytest.fixture(scope="module")
def tenancy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("pin-tenancy") / "tenancy.yaml"
    path.write_text(yaml.safe_dump({"namespaces": {}}))
    return path


@pytest.fixture(scope="module")
def osprov(full_stack: StackEnv, tmp_path_factory: pytest.TempPathFactory, tenancy: Path) -> Iterator[Osprov]:
    ensure_crd(full_stack, "Server")
    tmp = tmp_path_factory.mktemp("server-pinning")
    for o in run_osprov(full_stack, tmp, extra_env={"OSPROV_TENANCY_FILE": str(tenancy)}):
        write_mapping(tenancy, o.namespace, None)
        yield o


def write_mapping(path: Path, namespace: str, pinning: dict[str, Any] | None) -> None:
    entry: dict[str, Any] = {"any_project": True} | ({"pinning": pinning} if pinning is not None else {})
    path.write_text(yaml.safe_dump({"namespaces": {namespace: entry}}))


def placement(admin: openstack.connection.Connection, method: str, path: str, **kw: Any) -> Any:
    resp = getattr(admin.placement, method)(path, microversion=PLACEMENT, **kw)
    resp.raise_for_status()
    return resp.json() if resp.content else None


@pytest.fixture(scope="module")
def node(admin: openstack.connection.Connection) -> tuple[str, str]:
    """The local compute node: (hypervisor hostname, its resource provider's UUID)."""
    [hv] = list(admin.compute.hypervisors())
    [rp] = placement(admin, "get", "/resource_providers", params={"name": hv.name})["resource_providers"]
    return str(hv.name), str(rp["uuid"])


@pytest.fixture(scope="module")
def trait_flavor(admin: openstack.connection.Connection) -> Iterator[tuple[str, str]]:
    """A flavor like m1.tiny that requires a custom trait no provider has: (flavor name, trait)."""
    trait = f"CUSTOM_OSPROV_PIN_{uuid.uuid4().hex[:8].upper()}"
    placement(admin, "put", f"/traits/{trait}")
    tiny = admin.compute.find_flavor("m1.tiny", ignore_missing=False)
    flavor = admin.compute.create_flavor(
        name=f"pin-{trait[-8:].lower()}", ram=tiny.ram, vcpus=tiny.vcpus, disk=tiny.disk
    )
    admin.compute.create_flavor_extra_specs(flavor, {f"trait:{trait}": "required"})
    yield str(flavor.name), trait
    admin.compute.delete_flavor(flavor.id, ignore_missing=True)


def set_trait(admin: openstack.connection.Connection, rp: str, trait: str, present: bool) -> None:
    """Add or remove one trait (the provider generation guards against nova-compute's own update)."""

    def attempt() -> bool:
        now = placement(admin, "get", f"/resource_providers/{rp}/traits")
        traits = set(now["traits"]) | {trait} if present else set(now["traits"]) - {trait}
        body = {"traits": sorted(traits), "resource_provider_generation": now["resource_provider_generation"]}
        resp = admin.placement.put(f"/resource_providers/{rp}/traits", json=body, microversion=PLACEMENT)
        return resp.status_code == 200

    wait_for(attempt, f"trait {trait} {'added to' if present else 'removed from'} {rp}", 30)


def nova_servers(admin: openstack.connection.Connection, project: str) -> list[Any]:
    ident: Any = admin.identity
    project_id = ident.find_project(project, domain_id="default", ignore_missing=False).id
    return list(admin.compute.servers(all_projects=True, project_id=project_id))


def test_pinning_is_refused_unless_the_operator_allows_it_and_a_preflight_miss_waits_until_the_node_fits(
    osprov: Osprov,
    admin: openstack.connection.Connection,
    project: str,
    node: tuple[str, str],
    trait_flavor: tuple[str, str],
    tenancy: Path,
) -> None:
    hv, rp = node
    flavor, trait = trait_flavor
    image = admin.image.find_image(IMAGE_NAMES[0], ignore_missing=False).id
    spec = {
        "project": {"name": project, "domain": "Default"},
        "flavor": flavor,
        "imageID": image,
        "deletionPolicy": "delete",
        "placement": {"hypervisorHostname": hv},
    }

    # N1: the mapping does not allow pinning here: Forbidden, nothing in Nova.
    osprov.apply("Server", "refused", spec)
    cond: dict[str, Any] = wait_for(
        lambda: (c := osprov.condition("Server", "refused", AVAILABLE)) and c["reason"] == "Forbidden" and c,
        "the pinned Server is Forbidden",
        60,
    )
    assert "may not be pinned" in cond["message"]
    assert nova_servers(admin, project) == []
    osprov.delete("Server", "refused")
    wait_for(lambda: osprov.get("Server", "refused") is None, "refused Server gone", 60)

    # N3: allowed with the preflight on; the node lacks the flavor's required trait: waiting, nothing in Nova.
    write_mapping(tenancy, osprov.namespace, {"placement_preflight": True})
    osprov.apply("Server", "pinned", spec)
    cond = wait_for(
        lambda: (
            c
            if (c := osprov.condition("Server", "pinned", AVAILABLE)) and trait in c.get("message", "")
            else None
        ),
        "the preflight miss is shown",
        90,
    )
    assert cond["status"] == "False" and f"lacks required trait {trait}" in cond["message"]
    assert f"resource provider {hv}" in cond["message"] and "no server was created" in cond["message"]
    assert nova_servers(admin, project) == []

    # The operator gives the node the trait: the next retry creates the server, on that hypervisor.
    set_trait(admin, rp, trait, present=True)
    try:
        server_id = osprov.wait_ready("Server", "pinned", timeout_s=240, ctype=AVAILABLE)["status"][
            "serverID"
        ]
        resp = admin.compute.get(f"/servers/{server_id}", microversion="2.60")
        resp.raise_for_status()
        assert resp.json()["server"]["OS-EXT-SRV-ATTR:hypervisor_hostname"] == hv
        assert [s.id for s in nova_servers(admin, project)] == [server_id]
        osprov.delete("Server", "pinned")
        wait_for(lambda: osprov.get("Server", "pinned") is None, "pinned Server deleted", 120)
    finally:
        set_trait(admin, rp, trait, present=False)
