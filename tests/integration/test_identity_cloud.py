"""A Volume, a Server and a LoadBalancer acting through an Identity, on the real Cinder, Nova and Octavia.

The owner fields the clouds record prove whose credentials made each object: Cinder's and Nova's `user_id`
is the Identity's user (never the controller's), and every object lives in the Identity's fresh project,
where the controller holds no role at all — a re-scoped controller token could not have made them. Then
the resources and the Identity go, and nothing of them is left in any cloud. Before the Identity kind,
every call ran on the controller's admin user re-scoped to a free-text spec.project.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openstack.connection
import pytest

from devenv.openstack.catalog import IMAGE_NAMES, VIP_NETWORK, VIP_SUBNET
from devenv.testing import StackEnv
from tests.support.osprov import Osprov
from tests.support.tenants import tenant_domain, tenant_osprov
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.stack, pytest.mark.fullstack]

AVAILABLE = "Available"
USES = {"identityRef": {"name": "team"}, "deletionPolicy": "delete"}


@pytest.fixture(scope="module")
def domain(admin: openstack.connection.Connection) -> Iterator[Any]:
    yield from tenant_domain(admin)


@pytest.fixture(scope="module")
def osprov(full_stack: StackEnv, tmp_path_factory: pytest.TempPathFactory, domain: Any) -> Iterator[Osprov]:
    tmp = tmp_path_factory.mktemp("identity-cloud")
    yield from tenant_osprov(full_stack, tmp, domain.name, ("Identity", "Volume", "Server", "LoadBalancer"))


def test_volume_server_and_load_balancer_are_made_with_the_identitys_credential_and_removed_with_it(
    osprov: Osprov, admin: openstack.connection.Connection
) -> None:
    osprov.apply("Identity", "team", {})
    identity = osprov.wait_ready("Identity", "team", timeout_s=90)["status"]
    project_id, user_id = identity["projectID"], identity["userID"]
    ident: Any = admin.identity
    assert user_id != admin.current_user_id
    assert list(ident.role_assignments(user_id=admin.current_user_id, scope_project_id=project_id)) == []
    image = admin.image.find_image(IMAGE_NAMES[0], ignore_missing=False).id
    network = admin.network.find_network(VIP_NETWORK, ignore_missing=False)  # shared: any project may use it
    subnet = admin.network.find_subnet(VIP_SUBNET, ignore_missing=False)
    listener = {"name": "http", "protocol": "TCP", "port": 80, "pool": {"members": []}}
    osprov.apply("Volume", "data", USES | {"size": 1})
    osprov.apply("Server", "app", USES | {"flavor": "m1.tiny", "imageID": image})
    osprov.apply(
        "LoadBalancer",
        "front",
        USES | {"vipNetworkID": network.id, "vipSubnetID": subnet.id, "listeners": [listener]},
    )
    volume_id = osprov.wait_ready("Volume", "data", 120, ctype=AVAILABLE)["status"]["volumeID"]
    server_id = osprov.wait_ready("Server", "app", 180, ctype=AVAILABLE)["status"]["serverID"]
    lb_id = osprov.wait_ready("LoadBalancer", "front", 180, ctype=AVAILABLE)["status"]["loadBalancerID"]

    volume = admin.block_storage.get_volume(volume_id)
    assert (volume.user_id, volume.project_id) == (user_id, project_id)
    server = admin.compute.get_server(server_id)
    assert (server.user_id, server.project_id) == (user_id, project_id)
    assert admin.load_balancer.get_load_balancer(lb_id).project_id == project_id

    for kind, name in (("Volume", "data"), ("Server", "app"), ("LoadBalancer", "front")):
        osprov.delete(kind, name)
    osprov.delete("Identity", "team")  # waits (InUse) until the three are gone, then removes itself
    resources = [("Volume", "data"), ("Server", "app"), ("LoadBalancer", "front"), ("Identity", "team")]
    wait_for(lambda: all(osprov.get(k, n) is None for k, n in resources), "all four deleted", 240)
    assert admin.block_storage.find_volume(volume_id, ignore_missing=True) is None
    assert admin.compute.find_server(server_id, ignore_missing=True) is None
    assert admin.load_balancer.find_load_balancer(lb_id, ignore_missing=True) is None
    assert ident.find_project(project_id, ignore_missing=True) is None
    assert ident.find_user(user_id, ignore_missing=True) is None
