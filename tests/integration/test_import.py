"""Observe only on the real local stack: managementPolicy unmanaged + import binds objects osprov did not make.

Another tool made a Cinder volume, a Nova server and an Octavia load balancer in a project; a Volume (by
exact name), a Server and a LoadBalancer (by ID) import them. Each status mirrors its object, a change made
behind osprov's back shows at the next read, nothing is ever written to them (their metadata and topology
stay as the other tool left them), and deleting the resources leaves all three in place. An import by ID
of another project's server finds nothing, although the controller's admin token could read it.
Rows O1–O4, S1–S3, OS1–OS3, OL1–OL3 (workflows/observe_import.py, workflows/volume_decisions.py).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import openstack.connection
import pytest

from devenv.openstack.catalog import IMAGE_NAMES, VIP_NETWORK, VIP_SUBNET
from devenv.testing import StackEnv
from tests.support.osprov import Osprov, ensure_crd, run_osprov
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.stack, pytest.mark.fullstack]

AVAILABLE = "Available"
CONTROLLER_USER = "admin"  # the user of the worker's clouds.yaml
THEIRS = {"owner": "another-tool"}


def _project(admin: openstack.connection.Connection, prefix: str) -> Any:
    ident: Any = admin.identity
    proj = ident.create_project(name=f"{prefix}-{uuid.uuid4().hex[:8]}", domain_id="default")
    user = ident.find_user(CONTROLLER_USER, domain_id="default", ignore_missing=False)
    for role_name in ("member", "load-balancer_member"):
        ident.assign_project_role_to_user(proj.id, user, ident.find_role(role_name, ignore_missing=False))
    return proj


@pytest.fixture(scope="module")
def legacy(admin: openstack.connection.Connection) -> Iterator[dict[str, Any]]:
    """A project with a volume, a server and a load balancer that another tool made; and another project
    with a server of its own."""
    proj, other = _project(admin, "legacy"), _project(admin, "other")
    tool, elsewhere = admin.connect_as_project(proj), admin.connect_as_project(other)
    image = admin.image.find_image(IMAGE_NAMES[0], ignore_missing=False).id
    flavor = admin.compute.find_flavor("m1.tiny", ignore_missing=False).id
    vip = admin.network.find_subnet(VIP_SUBNET, ignore_missing=False)
    made = {
        "project": proj,
        "volume": tool.block_storage.create_volume(name="legacy-data", size=1, metadata=THEIRS),
        "server": tool.compute.create_server(
            name="legacy-app", image_id=image, flavor_id=flavor, networks="none", metadata=THEIRS
        ),
        "lb": tool.load_balancer.create_load_balancer(
            name="legacy-lb",
            vip_network_id=admin.network.find_network(VIP_NETWORK, ignore_missing=False).id,
            vip_subnet_id=vip.id,
        ),
        "foreign": elsewhere.compute.create_server(
            name="not-yours", image_id=image, flavor_id=flavor, networks="none"
        ),
    }
    yield made
    for conn in (tool, elsewhere):
        for server in conn.compute.servers():
            conn.compute.delete_server(server.id, ignore_missing=True)
    tool.load_balancer.delete_load_balancer(made["lb"].id, cascade=True, ignore_missing=True)
    wait_for(lambda: not list(tool.compute.servers()), "the legacy server gone", 120)
    tool.block_storage.delete_volume(made["volume"].id, ignore_missing=True)


@pytest.fixture(scope="module")
def osprov(full_stack: StackEnv, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Osprov]:
    for kind in ("Volume", "Server", "LoadBalancer"):
        ensure_crd(full_stack, kind)
    # A short resync: changes made behind osprov's back show within seconds.
    yield from run_osprov(full_stack, tmp_path_factory.mktemp("import"), resync_seconds=5)


def unmanaged(project: Any, chosen: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {
        "project": {"name": project.name, "domain": "Default"},
        "managementPolicy": "unmanaged",
        "deletionPolicy": "retain",
        "import": chosen,
        **fields,
    }


def available(osprov: Osprov, kind: str, name: str) -> dict[str, Any]:
    osprov.wait_ready(kind, name, 240, ctype=AVAILABLE)
    obj = osprov.get(kind, name)
    assert obj is not None
    return dict(obj["status"])


def test_imports_mirror_objects_osprov_did_not_create_and_leave_them_when_deleted(
    osprov: Osprov, admin: openstack.connection.Connection, legacy: dict[str, Any]
) -> None:
    proj, volume, server, lb = legacy["project"], legacy["volume"], legacy["server"], legacy["lb"]
    # Spec fields that describe the object are not compared: an unmanaged resource converges nothing.
    server_fields = {"flavor": "m1.small", "imageID": "not-what-it-runs", "tags": {"team": "x"}}
    lb_fields = {
        "vipNetworkID": "n",
        "listeners": [{"name": "http", "protocol": "TCP", "port": 80, "pool": {"members": []}}],
        "publicIP": True,
    }
    osprov.apply("Volume", "data", unmanaged(proj, {"filter": {"name": "legacy-data"}}, size=1))
    osprov.apply("Server", "app", unmanaged(proj, {"id": server.id}, **server_fields))
    osprov.apply("LoadBalancer", "front", unmanaged(proj, {"id": lb.id}, **lb_fields))

    assert available(osprov, "Volume", "data")["volumeID"] == volume.id
    status = available(osprov, "Server", "app")
    assert status["serverID"] == server.id and status["phase"] == "Running"
    status = available(osprov, "LoadBalancer", "front")
    assert (
        status["loadBalancerID"] == lb.id
        and status["vipAddress"] == admin.load_balancer.get_load_balancer(lb.id).vip_address
    )
    assert osprov.condition("Server", "app", AVAILABLE)["message"].startswith("observing Nova server")  # type: ignore[index]

    launched = admin.compute.get_server(server.id).launched_at  # a rebuild would relaunch it
    # Stopped behind osprov's back: the monitor's next read mirrors it (OS1 SHUTOFF, phase Stopped).
    admin.compute.stop_server(server.id)
    wait_for(
        lambda: (osprov.get("Server", "app") or {}).get("status", {}).get("phase") == "Stopped",
        "Stopped",
        120,
    )

    # Another project's server, by ID: not found (O3), although the admin token could read it.
    foreign = legacy["foreign"]
    osprov.apply("Server", "stolen", unmanaged(proj, {"id": foreign.id}, flavor="m1.tiny", imageID="x"))
    wait_for(
        lambda: (
            "nothing to observe"
            in ((osprov.condition("Server", "stolen", AVAILABLE) or {}).get("message") or "")
        ),
        "the foreign server refused",
        120,
    )

    for kind, name in (
        ("Volume", "data"),
        ("Server", "app"),
        ("LoadBalancer", "front"),
        ("Server", "stolen"),
    ):
        osprov.delete(kind, name)
    gone = [("Volume", "data"), ("Server", "app"), ("LoadBalancer", "front"), ("Server", "stolen")]
    wait_for(lambda: all(osprov.get(k, n) is None for k, n in gone), "the four resources deleted", 120)

    # Nothing was written to them, and all three are still there.
    assert admin.block_storage.get_volume(volume.id).metadata == THEIRS
    kept = admin.compute.get_server(server.id)
    assert kept.metadata == THEIRS and kept.status == "SHUTOFF" and kept.launched_at == launched
    assert admin.compute.get_server(foreign.id).metadata == {}
    assert admin.load_balancer.get_load_balancer(lb.id).provisioning_status == "ACTIVE"
    # Listener's query key is load_balancer_id: openstacksdk drops `loadbalancer_id` (Pool's) silently,
    # which listed every listener the admin sees (tests/activities/test_sdk_query_keys.py).
    assert list(admin.load_balancer.listeners(load_balancer_id=lb.id)) == []
    assert list(admin.network.ips(project_id=proj.id)) == []
