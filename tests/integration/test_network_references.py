"""Servers and LoadBalancers naming a Network (and SecurityGroups) by resource name, on the real local stack.

The resources all belong to one Identity; the create activities find the Neutron objects by deterministic name
in the Identity's project (activities/siblings.py). Evidence comes from Neutron, Nova and Octavia: the server's
one port is on that network with exactly that group, an image rebuild keeps the same port (and so its IP), and
the load balancer's VIP is on that network. A Server naming a Network of another Identity is refused.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openstack.connection
import pytest

from devenv.openstack.catalog import IMAGE_NAMES
from devenv.testing import StackEnv
from tests.support.osprov import Osprov
from tests.support.tenants import tenant_domain, tenant_osprov
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.stack, pytest.mark.fullstack]

AVAILABLE = "Available"
USES = {"identityRef": {"name": "team"}, "deletionPolicy": "delete"}
SSH = {"direction": "ingress", "protocol": "tcp", "portRangeMin": 22, "portRangeMax": 22}


@pytest.fixture(scope="module")
def domain(admin: openstack.connection.Connection) -> Iterator[Any]:
    yield from tenant_domain(admin)


@pytest.fixture(scope="module")
def osprov(full_stack: StackEnv, tmp_path_factory: pytest.TempPathFactory, domain: Any) -> Iterator[Osprov]:
    tmp = tmp_path_factory.mktemp("server-networks")
    yield from tenant_osprov(
        full_stack, tmp, domain.name, ("Identity", "Network", "SecurityGroup", "Server", "LoadBalancer")
    )


def _ports(admin: openstack.connection.Connection, server_id: str) -> list[Any]:
    return sorted(admin.network.ports(device_id=server_id), key=lambda p: p.id)


def test_a_server_on_a_network_with_a_security_group_keeps_its_port_across_a_rebuild(
    osprov: Osprov, admin: openstack.connection.Connection
) -> None:
    image_a, image_b = (admin.image.find_image(n, ignore_missing=False).id for n in IMAGE_NAMES)
    osprov.apply("Identity", "team", {})
    osprov.apply("Identity", "other", {})
    project_id = osprov.wait_ready("Identity", "team", timeout_s=90)["status"]["projectID"]
    # Applied together: the Server's create waits (its pass fails and is retried) until both exist.
    osprov.apply("Network", "app", USES | {"subnet": {"cidr": "10.79.0.0/24"}})
    osprov.apply("SecurityGroup", "ssh", USES | {"rules": [SSH]})
    server_spec = USES | {
        "flavor": "m1.tiny",
        "imageID": image_a,
        "networks": [{"network": "app"}],
        "securityGroups": ["ssh"],
    }
    osprov.apply("Server", "web", server_spec)
    network_id = osprov.wait_ready("Network", "app", 120, ctype=AVAILABLE)["status"]["networkID"]
    group_id = osprov.wait_ready("SecurityGroup", "ssh", 120, ctype=AVAILABLE)["status"]["securityGroupID"]
    server_id = osprov.wait_ready("Server", "web", 180, ctype=AVAILABLE)["status"]["serverID"]

    server = admin.compute.get_server(server_id)
    assert server.project_id == project_id
    (port,) = _ports(admin, server_id)
    assert port.network_id == network_id and port.project_id == project_id
    assert port.security_group_ids == [group_id]
    ip = [f["ip_address"] for f in port.fixed_ips]
    assert len(ip) == 1 and ip[0].startswith("10.79.0.")

    osprov.apply("Server", "web", server_spec | {"imageID": image_b})
    osprov.wait_ready("Server", "web", 180, generation=2, ctype=AVAILABLE)
    wait_for(
        lambda: not ((osprov.get("Server", "web") or {}).get("status") or {}).get("rebuild"),
        "the rebuild settled (its marker cleared)",
        60,
    )
    assert admin.compute.get_server(server_id).image["id"] == image_b
    (after,) = _ports(admin, server_id)
    assert (after.id, [f["ip_address"] for f in after.fixed_ips]) == (port.id, ip)
    assert after.security_group_ids == [group_id]

    # Another Identity's Server may not use this Identity's Network: refused, nothing created.
    osprov.apply(
        "Server",
        "intruder",
        {
            "identityRef": {"name": "other"},
            "flavor": "m1.tiny",
            "imageID": image_a,
            "networks": [{"network": "app"}],
        },
    )
    refused = wait_for(
        lambda: (
            c
            if (c := osprov.condition("Server", "intruder", AVAILABLE))
            and "does not live where" in c["message"]
            else None
        ),
        "the intruder's create is refused",
        120,
    )
    assert "Network app" in refused["message"]
    intruder_uid = (osprov.get("Server", "intruder") or {})["metadata"]["uid"]
    assert not list(admin.compute.servers(all_projects=True, name=f"server-{intruder_uid}"))

    for kind, name in (("Server", "intruder"), ("Server", "web")):
        osprov.delete(kind, name)
    wait_for(lambda: osprov.get("Server", "web") is None, "the Server is deleted", 180)
    for kind, name in (("Network", "app"), ("SecurityGroup", "ssh")):
        osprov.delete(kind, name)
    wait_for(
        lambda: osprov.get("Network", "app") is None and osprov.get("SecurityGroup", "ssh") is None,
        "the Network and the SecurityGroup are deleted",
        180,
    )
    assert admin.network.find_network(network_id, ignore_missing=True) is None


def test_a_load_balancer_names_its_vip_network_by_resource(
    osprov: Osprov, admin: openstack.connection.Connection
) -> None:
    osprov.apply("Identity", "team", {})
    project_id = osprov.wait_ready("Identity", "team", timeout_s=90)["status"]["projectID"]
    osprov.apply("Network", "front", USES | {"subnet": {"cidr": "10.80.0.0/24"}})
    osprov.apply("LoadBalancer", "web", USES | {"vipNetwork": "front"})
    network_id = osprov.wait_ready("Network", "front", 120, ctype=AVAILABLE)["status"]["networkID"]
    status = osprov.wait_ready("LoadBalancer", "web", 180, ctype=AVAILABLE)["status"]
    lb = admin.load_balancer.get_load_balancer(status["loadBalancerID"])
    assert (lb.vip_network_id, lb.project_id) == (network_id, project_id)
    assert status["vipAddress"].startswith("10.80.0.")

    osprov.delete("LoadBalancer", "web")
    wait_for(lambda: osprov.get("LoadBalancer", "web") is None, "the LoadBalancer is deleted", 180)
    osprov.delete("Network", "front")
    wait_for(lambda: osprov.get("Network", "front") is None, "the Network is deleted", 180)
    assert admin.network.find_network(network_id, ignore_missing=True) is None
