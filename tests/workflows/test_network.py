"""The Network workflow (workflows/network.py) on the time-skipping server with a stubbed Neutron.

Tests are named by the step labels of the tables in workflows/network_decisions.py: N (create), S, D (delete).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest_asyncio
from temporalio.client import WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from osprov.api import network_io as io
from osprov.api import vlan_io
from tests.workflows.fakes_network import FINALIZER, SPEC, NetworkHarness, network_harness
from tests.workflows.harness import eventually

UID = "6a2e0c3a-0000-4000-8000-000000000001"
NAMES = io.Names(network=io.network_name(UID), subnet=io.subnet_name(UID), router=io.router_name(UID))


@pytest_asyncio.fixture
async def h(tenv: WorkflowEnvironment) -> AsyncIterator[NetworkHarness]:
    async for hs in network_harness(tenv):
        yield hs


def spec(**extra: Any) -> dict[str, Any]:
    return SPEC | extra


async def provisioned(h: NetworkHarness, **extra: Any) -> WorkflowHandle[Any, Any]:
    h.neutron.add_project()
    wf = await h.apply("Network", spec(**extra), uid=UID, name="net")
    await h.until(lambda: h.condition().get("reason") == "Provisioned", "network provisioned")
    return wf


async def test_n3_n5_n7_n9_s1_create_all_four_then_report_their_ids(h: NetworkHarness) -> None:
    await provisioned(h)
    n = h.neutron
    look = n.lookup(n.add_project(), NAMES)
    [net], [sub], [router] = look.networks, look.subnets, look.routers
    assert sub.network_id == net.id and sub.cidr == "10.1.0.0/24"
    assert router.external_network_id == "ext-1" and router.interface_subnets == [sub.id]
    status = h.status()
    assert (status["networkID"], status["subnetID"], status["routerID"]) == (net.id, sub.id, router.id)
    assert [n.count(a.name) for a in (io.CREATE_NETWORK, io.CREATE_SUBNET, io.CREATE_ROUTER)] == [1, 1, 1]


async def test_no_router_asked_makes_no_router(h: NetworkHarness) -> None:
    plain = {k: v for k, v in SPEC.items() if k != "router"}
    h.neutron.add_project()
    await h.apply("Network", plain, uid=UID, name="net")
    await h.until(lambda: h.condition().get("reason") == "Provisioned", "network provisioned")
    assert h.neutron.count(io.CREATE_ROUTER.name) == 0 and "routerID" not in h.status()


async def test_a_lost_create_answer_adopts_instead_of_duplicating(h: NetworkHarness) -> None:
    # Neutron made the network and the subnet, the answers were lost (as a kill -9 of the worker): the
    # retries find them by name and make no second one.
    h.neutron.lost_create_answers = 2
    await provisioned(h)
    look = h.neutron.lookup(h.neutron.add_project(), NAMES)
    assert len(look.networks) == 1 and len(look.subnets) == 1


async def test_n1_missing_project_is_a_clear_condition_and_nothing_is_made(h: NetworkHarness) -> None:
    await h.apply("Network", spec(), uid=UID, name="net")
    await h.until(lambda: "does not exist in Keystone yet" in h.condition().get("message", ""), "N1")
    assert h.condition()["reason"] == "Provisioning"
    assert h.neutron.count(io.CREATE_NETWORK.name) == 0


async def test_n2_duplicate_networks_fail_closed(h: NetworkHarness) -> None:
    scope = h.neutron.add_project()
    h.neutron.add_network(scope, NAMES.network)
    h.neutron.add_network(scope, NAMES.network)
    await h.apply("Network", spec(), uid=UID, name="net")
    await h.until(lambda: "2 Neutron networks are named" in h.condition().get("message", ""), "N2")
    assert h.neutron.count(io.CREATE_SUBNET.name) == 0


async def test_n6_a_subnet_of_another_cidr_is_never_changed(h: NetworkHarness) -> None:
    scope = h.neutron.add_project()
    net = h.neutron.add_network(scope, NAMES.network)
    h.neutron.add_subnet(scope, NAMES.subnet, net.id, "192.168.9.0/24")
    await h.apply("Network", spec(), uid=UID, name="net")
    await h.until(lambda: "osprov never changes it" in h.condition().get("message", ""), "N6")
    assert h.condition()["reason"] == "Errored" and h.neutron.count(io.CREATE_ROUTER.name) == 0


async def test_d3_d4_d6_d7_d8_delete_in_order_then_drop_the_finalizer(h: NetworkHarness) -> None:
    wf = await provisioned(h)
    await h.signal(wf, 1, spec(), deleting=True, finalizers=[FINALIZER])
    await wf.result()
    n = h.neutron
    assert not n.networks and not n.subnets and not n.routers
    deletes = [c for c in n.calls if c in (io.REMOVE_ROUTER_INTERFACE.name, io.DELETE_OBJECT.name)]
    assert deletes == [io.REMOVE_ROUTER_INTERFACE.name] + [io.DELETE_OBJECT.name] * 3


async def test_d5_foreign_ports_hold_the_delete_with_a_message_until_they_go(h: NetworkHarness) -> None:
    wf = await provisioned(h)
    net_id = h.status()["networkID"]
    h.neutron.ports[net_id] = 2
    await h.signal(wf, 1, spec(), deleting=True, finalizers=[FINALIZER])
    await h.until(lambda: "still has 2 ports osprov did not make" in h.condition().get("message", ""), "D5")
    assert h.condition()["reason"] == "Deprovisioning"
    assert net_id in h.neutron.networks and h.neutron.subnets  # nothing forced: the subnet stays too
    h.neutron.ports[net_id] = 0  # their owner removed them
    await h.until(lambda: not h.neutron.networks, "network deleted once the ports are gone", virtual_s=600)
    await wf.result()


# --- provider networks: P1 (policy), P2 (allocation), P3 (exhaustion), P4 (release) --------------------
PROVIDER = {"provider": {"physicalNetwork": "physnet1"}}


async def allocator_table(h: NetworkHarness) -> dict[str, int]:
    handle = h.env.client.get_workflow_handle(vlan_io.workflow_id("physnet1", h.queue))
    state = await handle.query(vlan_io.QUERY_TABLE, result_type=vlan_io.AllocatorState)
    return state.table


async def test_p1_a_physical_network_the_operator_did_not_allow_is_forbidden_before_any_call(
    h: NetworkHarness,
) -> None:
    h.neutron.add_project()
    await h.apply("Network", spec(**PROVIDER), uid=UID, name="net")
    await h.until(lambda: h.condition().get("reason") == "Forbidden", "P1")
    assert "not in the operator's mapping" in h.condition()["message"]
    assert h.neutron.count(io.FIND_NETWORK.name) == 0 and h.neutron.count(io.CREATE_NETWORK.name) == 0


async def test_p2_p4_concurrent_provider_networks_get_distinct_ids_and_release_them(
    h: NetworkHarness,
) -> None:
    h.neutron.add_project()
    h.neutron.vlan_range = vlan_io.VlanRange(first=100, last=109)
    wfs = [await h.apply("Network", spec(**PROVIDER), name=f"net{i}") for i in range(6)]
    await h.until(
        lambda: sum(s["conditions"][0]["reason"] == "Provisioned" for s in h.written.values()) == 6, "6 ready"
    )
    ids = sorted(s["segmentationID"] for s in h.written.values())
    assert len(set(ids)) == 6 and all(100 <= i <= 109 for i in ids)
    made = sorted(net.segmentation_id or 0 for _, net in h.neutron.networks.values())
    assert made == ids  # each network was made with its own allocated ID
    assert sorted((await allocator_table(h)).values()) == ids
    for wf in wfs:
        await h.signal(wf, 1, spec(**PROVIDER), deleting=True, finalizers=[FINALIZER])
    for wf in wfs:
        await wf.result()
    assert not h.neutron.networks and await allocator_table(h) == {}


async def test_p3_exhaustion_is_a_clear_condition_and_the_id_is_given_once_one_is_released(
    h: NetworkHarness,
) -> None:
    h.neutron.add_project()
    h.neutron.vlan_range = vlan_io.VlanRange(first=200, last=200)
    first = await h.apply("Network", spec(**PROVIDER), name="first")
    await h.until(lambda: h.condition().get("reason") == "Provisioned", "the first gets VLAN 200")
    second = await h.apply("Network", spec(**PROVIDER), name="second")
    await h.until(lambda: "no free VLAN ID in range 200-200" in h.condition().get("message", ""), "P3")
    assert h.neutron.count(io.CREATE_NETWORK.name) == 1  # nothing made without an ID
    await h.signal(first, 1, spec(**PROVIDER), deleting=True, finalizers=[FINALIZER])
    await first.result()
    await h.until(
        lambda: h.written.get(second.id, {}).get("segmentationID") == 200, "the second gets it", virtual_s=900
    )
    assert list((await allocator_table(h)).values()) == [200]


async def test_p2_an_id_a_foreign_network_uses_on_the_physnet_is_skipped(h: NetworkHarness) -> None:
    scope = h.neutron.add_project("other")
    h.neutron.add_network(
        scope, "not-osprovs", network_type="vlan", physical_network="physnet1", segmentation_id=100
    )
    h.neutron.add_project()
    h.neutron.vlan_range = vlan_io.VlanRange(first=100, last=109)
    await h.apply("Network", spec(**PROVIDER), uid=UID, name="net")
    await h.until(lambda: h.condition().get("reason") == "Provisioned", "provisioned")
    assert h.status()["segmentationID"] == 101


async def test_the_allocator_continues_as_new_with_its_table(h: NetworkHarness) -> None:
    physnet = "physnet-can"
    handle = await h.env.client.start_workflow(
        vlan_io.WORKFLOW_TYPE,
        vlan_io.AllocatorInput(physical_network=physnet, max_messages=2),
        id=vlan_io.workflow_id(physnet, h.queue),
        task_queue=h.queue,
    )
    h.started.append(handle)
    first_run = (await handle.describe()).run_id

    async def table_is(want: dict[str, int]) -> bool:
        state = await handle.query(vlan_io.QUERY_TABLE, result_type=vlan_io.AllocatorState)
        return state.table == want

    vlan_range = vlan_io.VlanRange(first=300, last=309)
    for n in range(3):  # owners without a workflow: the grants are not delivered, the table keeps them
        ask = vlan_io.Allocate(owner=f"gone-{n}", physical_network=physnet, range=vlan_range, seq=1)
        await handle.signal(vlan_io.SIGNAL_ALLOCATE, ask)

    async def rolled_over() -> bool:
        return (await handle.describe()).run_id != first_run

    # The undelivered grants' failures come back first; the run continues as new after them.
    await eventually(rolled_over, "the allocator continued as new")
    await eventually(lambda: table_is({"gone-0": 300, "gone-1": 301, "gone-2": 302}), "the table carried")
    await handle.signal(vlan_io.SIGNAL_RELEASE, vlan_io.Release(owner="gone-1", physical_network=physnet))
    await eventually(lambda: table_is({"gone-0": 300, "gone-2": 302}), "one released")
