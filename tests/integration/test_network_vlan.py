"""Provider (VLAN) Networks on the real Neutron with osprov's VLAN allocator, under kill -9 of the worker.

Issue 18's done-when: 30 concurrent provider Networks, with the worker killed (SIGKILL of its process group)
while they are being allocated, created and deleted, get 30 distinct VLAN IDs from the operator's range —
asserted on the networks Neutron holds, not only on the status — and release them all on delete (the
allocator's table is empty and Neutron has none of them left). An ID a network osprov did not make uses on
the physical network is never handed out. The local Neutron's ML2 knows physnet1 without
a range of its own (devenv/openstack/network.py): every segment is osprov's.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import openstack.connection
import pytest
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from devenv.testing import StackEnv
from osprov.api import vlan_io
from osprov.api.network_io import network_name
from tests.support.osprov import Osprov
from tests.support.tenants import tenant_domain, tenant_osprov
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.stack, pytest.mark.fullstack]

AVAILABLE = "Available"
COUNT = 30
FIRST, LAST = 1000, 1039  # the operator's range: more IDs than Networks, so a duplicate is not forced


@pytest.fixture(scope="module")
def domain(admin: openstack.connection.Connection) -> Iterator[Any]:
    yield from tenant_domain(admin)


@pytest.fixture(scope="module")
def osprov(full_stack: StackEnv, tmp_path_factory: pytest.TempPathFactory, domain: Any) -> Iterator[Osprov]:
    tmp = tmp_path_factory.mktemp("network-vlan")
    yield from tenant_osprov(
        full_stack,
        tmp,
        domain.name,
        ("Identity", "Network"),
        namespace_policy={"provider_networks": ["physnet1"]},
        policy={"vlan_ranges": {"physnet1": {"first": FIRST, "last": LAST}}},
    )


def spec(i: int) -> dict[str, Any]:
    return {
        "identityRef": {"name": "team"},
        "deletionPolicy": "delete",
        "subnet": {"cidr": f"10.{100 + i}.0.0/24", "enableDHCP": False},
        "provider": {"physicalNetwork": "physnet1"},
    }


def vlan_networks(admin: openstack.connection.Connection, project_id: str) -> list[Any]:
    """Every network of the project on physnet1 (the admin client sees the segment)."""
    return [
        n for n in admin.network.networks(project_id=project_id) if n.provider_physical_network == "physnet1"
    ]


def available(osprov: Osprov) -> int:
    return sum(
        1
        for i in range(COUNT)
        if (c := osprov.condition("Network", f"n{i}", AVAILABLE)) and c["status"] == "True"
    )


def allocator_table(osprov: Osprov) -> dict[str, int]:
    async def query() -> dict[str, int]:
        client = await Client.connect(
            osprov.stack.temporal_address,
            namespace=osprov.stack.temporal_namespace,
            data_converter=pydantic_data_converter,
        )
        handle = client.get_workflow_handle(vlan_io.workflow_id("physnet1", f"osprov-{osprov.namespace}"))
        state = await handle.query(vlan_io.QUERY_TABLE, result_type=vlan_io.AllocatorState)
        return state.table

    return asyncio.run(query())


def test_thirty_concurrent_provider_networks_under_kill_9_get_distinct_vlans_and_release_them(
    osprov: Osprov, admin: openstack.connection.Connection
) -> None:
    # A VLAN network osprov did not make holds the range's first ID: it must never be handed out.
    foreign = admin.network.create_network(
        name=f"foreign-{uuid.uuid4().hex[:8]}",
        provider_network_type="vlan",
        provider_physical_network="physnet1",
        provider_segmentation_id=FIRST,
    )
    osprov.apply("Identity", "team", {})
    project_id = osprov.wait_ready("Identity", "team", timeout_s=90)["status"]["projectID"]
    for i in range(COUNT):
        osprov.apply("Network", f"n{i}", spec(i))

    # kill -9 while the first IDs are being allocated and networks made (before their status is written),
    # then twice more while the rest converge.
    wait_for(lambda: len(vlan_networks(admin, project_id)) >= 1, "the first provider network made", 120)
    osprov.worker.restart()
    wait_for(lambda: available(osprov) >= 10, "10 Networks available", 180)
    osprov.worker.restart()
    wait_for(lambda: available(osprov) >= 20, "20 Networks available", 180)
    osprov.worker.restart()
    wait_for(lambda: available(osprov) == COUNT, f"all {COUNT} Networks available", 240)

    statuses = {f"n{i}": (osprov.get("Network", f"n{i}") or {}) for i in range(COUNT)}
    ids = {name: obj["status"]["segmentationID"] for name, obj in statuses.items()}
    assert len(set(ids.values())) == COUNT and all(FIRST < v <= LAST for v in ids.values()), ids
    made = vlan_networks(admin, project_id)
    assert len(made) == COUNT  # no network duplicated by a replayed or retried create
    by_name = {n.name: n for n in made}
    for name, obj in statuses.items():
        net = by_name[network_name(obj["metadata"]["uid"])]
        assert net.id == obj["status"]["networkID"] and net.provider_network_type == "vlan"
        assert net.provider_segmentation_id == ids[name]
    assert sorted(allocator_table(osprov).values()) == sorted(ids.values())

    for i in range(COUNT):
        osprov.delete("Network", f"n{i}")
    wait_for(lambda: len(vlan_networks(admin, project_id)) <= COUNT - 5, "5 networks deleted", 180)
    osprov.worker.restart()  # between Neutron's deletes and the releases
    wait_for(
        lambda: all(osprov.get("Network", f"n{i}") is None for i in range(COUNT)), "all Networks gone", 240
    )
    assert vlan_networks(admin, project_id) == []
    # Every ID released (the releases were delivered before the finalizers went; the query may run before
    # the allocator's task that applies the last of them).
    wait_for(lambda: allocator_table(osprov) == {}, "the allocator's table empty", 30)

    assert admin.network.get_network(foreign.id).provider_segmentation_id == FIRST  # left alone
    admin.network.delete_network(foreign.id)

    osprov.delete("Identity", "team")
    wait_for(lambda: osprov.get("Identity", "team") is None, "the Identity is gone", 120)
