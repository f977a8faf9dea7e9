"""Network end to end on the real local stack: CR → bridge → Temporal → worker → real Neutron → status.

The Network acts through an Identity: its network, subnet and router are made with the Identity's
application credential in the Identity's fresh project (where the controller holds no role), and asserted
in Neutron with the admin client. Delete removes them in order, and waits (never forcing) while a port
osprov did not make is on the network.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openstack.connection
import pytest

from devenv.openstack.catalog import PUBLIC_NETWORK
from devenv.testing import StackEnv
from osprov.api.network_io import network_name, router_name, subnet_name
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
    tmp = tmp_path_factory.mktemp("network")
    yield from tenant_osprov(full_stack, tmp, domain.name, ("Identity", "Network"), resync_seconds=600)


def named(found: Any, name: str) -> list[Any]:
    return [r for r in found if r.name == name]


def test_network_subnet_and_router_are_made_in_the_identitys_project_and_removed_in_order(
    osprov: Osprov, admin: openstack.connection.Connection
) -> None:
    osprov.apply("Identity", "team", {})
    identity = osprov.wait_ready("Identity", "team", timeout_s=90)["status"]
    project_id, user_id = identity["projectID"], identity["userID"]
    public = admin.network.find_network(PUBLIC_NETWORK, ignore_missing=False)
    spec = USES | {"subnet": {"cidr": "10.77.0.0/24"}, "router": {"externalNetworkID": public.id}}
    osprov.apply("Network", "app", spec)
    obj = osprov.wait_ready("Network", "app", 120, ctype=AVAILABLE)
    status, uid = obj["status"], obj["metadata"]["uid"]
    cond = osprov.condition("Network", "app", AVAILABLE)
    assert cond is not None and cond["reason"] == "Provisioned"

    net = admin.network.get_network(status["networkID"])
    assert net.name == network_name(uid) and net.project_id == project_id
    assert net.provider_network_type == "vxlan"  # a tenant network of Neutron's default type
    subnet = admin.network.get_subnet(status["subnetID"])
    assert (subnet.name, subnet.network_id, subnet.cidr) == (subnet_name(uid), net.id, "10.77.0.0/24")
    assert subnet.project_id == project_id and subnet.is_dhcp_enabled
    router = admin.network.get_router(status["routerID"])
    assert router.name == router_name(uid) and router.project_id == project_id
    assert router.external_gateway_info["network_id"] == public.id
    interfaces = list(admin.network.ports(device_id=router.id, device_owner="network:router_interface"))
    assert [ip["subnet_id"] for p in interfaces for ip in p.fixed_ips] == [subnet.id]
    # Made with the Identity's credential: the controller holds no role in the project.
    ident: Any = admin.identity
    assert user_id != admin.current_user_id
    assert list(ident.role_assignments(user_id=admin.current_user_id, scope_project_id=project_id)) == []

    # A port osprov did not make holds the delete, with a message; it is never deleted for the user.
    foreign = admin.network.create_port(network_id=net.id, project_id=project_id, name="not-osprovs")
    osprov.delete("Network", "app")
    held = wait_for(
        lambda: (
            c
            if (c := osprov.condition("Network", "app", AVAILABLE))
            and "1 port osprov did not make" in c["message"]
            else None
        ),
        "the delete waits for the foreign port",
        90,
    )
    assert held["reason"] == "Deprovisioning"
    assert admin.network.find_port(foreign.id, ignore_missing=True) is not None
    assert admin.network.find_network(net.id, ignore_missing=True) is not None
    # The router went first (its interface, then itself): it holds nothing the port needs.
    assert admin.network.find_router(router.id, ignore_missing=True) is None

    admin.network.delete_port(foreign.id)
    wait_for(lambda: osprov.get("Network", "app") is None, "the Network resource is gone", 120)
    assert admin.network.find_subnet(subnet.id, ignore_missing=True) is None
    assert admin.network.find_network(net.id, ignore_missing=True) is None
    assert named(admin.network.networks(project_id=project_id), network_name(uid)) == []

    osprov.delete("Identity", "team")
    wait_for(lambda: osprov.get("Identity", "team") is None, "the Identity is gone", 120)
