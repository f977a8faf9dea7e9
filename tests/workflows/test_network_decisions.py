"""The Network decision tables (workflows/network_decisions.py's docstring), one row per rule by step label.

Pure functions, no Temporal; test_network.py proves the workflow executes these decisions.
"""

from __future__ import annotations

from typing import Any

from osprov.api import network_io as io
from osprov.api.cinder_io import ProjectScope
from osprov.api.common import AvailableReason as R
from osprov.api.network import NetworkSpec
from osprov.workflows.network_decisions import (
    Done,
    Errored,
    Fail,
    Observation,
    Provisioned,
    RemoveInterface,
    Target,
    create,
    delete,
)

NAMES = io.Names(network="network-u1", subnet="subnet-u1", router="router-u1")
SCOPE = ProjectScope(project="p", domain="Default")
TARGET = Target(names=NAMES, description="osprov Network ns/net uid u1", scope=SCOPE)
SEGMENT = io.Segment(physical_network="physnet1", segmentation_id=101)
NET = io.NetworkView(id="net-1", name=NAMES.network, status="ACTIVE", network_type="vxlan")
SUB = io.SubnetView(id="sub-1", name=NAMES.subnet, network_id="net-1", cidr="10.1.0.0/24")
RTR = io.RouterView(id="rtr-1", name=NAMES.router, external_network_id="ext-1", interface_subnets=["sub-1"])


def spec(**extra: Any) -> NetworkSpec:
    base = {"project": {"name": "p", "domain": "Default"}, "subnet": {"cidr": "10.1.0.0/24"}}
    return NetworkSpec.model_validate(base | extra)


ROUTED = {"router": {"externalNetworkID": "ext-1"}}


def seen(**found: Any) -> Observation:
    return Observation(lookup=io.NetworkLookup(project_found=True, **found))


def failed(d: Any, reason: R, text: str) -> None:
    assert isinstance(d.action, Fail) and d.action.reason == reason, d
    assert text in d.action.message, d.action.message


# --- create -------------------------------------------------------------------------------------------
def test_first_step_reads_the_three_names() -> None:
    d = create(spec(), TARGET, Observation())
    assert d.rule == "N1" and isinstance(d.action, io.FindNetwork) and d.action.names == NAMES


def test_n1_project_missing() -> None:
    d = create(spec(), TARGET, Observation(lookup=io.NetworkLookup(project_found=False)))
    assert d.rule == "N1"
    failed(d, R.PROVISIONING, "does not exist in Keystone yet")


def test_n2_duplicates_of_any_object() -> None:
    for found in (
        {"networks": [NET, NET]},
        {"networks": [NET], "subnets": [SUB, SUB]},
        {"routers": [RTR, RTR]},
    ):
        d = create(spec(), TARGET, seen(**found))
        assert d.rule == "N2"
        failed(d, R.ERRORED, "operator must remove the extra")


def test_n3_create_the_network_tenant_and_provider() -> None:
    d = create(spec(), TARGET, seen())
    assert d.rule == "N3" and isinstance(d.action, io.CreateNetwork)
    assert d.action.name == NAMES.network and d.action.segment is None and d.action.project_id is None
    provider = Target(names=NAMES, description="", scope=SCOPE, segment=SEGMENT, admin=True, project_id="pid")
    d = create(spec(provider={"physicalNetwork": "physnet1"}), provider, seen())
    assert (
        isinstance(d.action, io.CreateNetwork)
        and d.action.segment == SEGMENT
        and d.action.project_id == "pid"
    )


def test_n4_a_network_of_another_segment_is_never_adopted() -> None:
    provider = Target(names=NAMES, description="", scope=SCOPE, segment=SEGMENT, admin=True)
    other = NET.model_copy(
        update={"network_type": "vlan", "physical_network": "physnet1", "segmentation_id": 7}
    )
    d = create(spec(provider={"physicalNetwork": "physnet1"}), provider, seen(networks=[other]))
    assert d.rule == "N4"
    failed(d, R.ERRORED, "not VLAN 101 on physnet1")
    d = create(spec(), TARGET, seen(networks=[other]))  # a VLAN network where a tenant one is asked
    assert d.rule == "N4"


def test_n5_create_the_subnet_on_the_network() -> None:
    d = create(spec(), TARGET, seen(networks=[NET]))
    assert d.rule == "N5" and isinstance(d.action, io.CreateSubnet)
    assert (d.action.network_id, d.action.cidr, d.action.ip_version) == ("net-1", "10.1.0.0/24", 4)
    d6 = create(spec(subnet={"cidr": "fd00::/64"}), TARGET, seen(networks=[NET]))
    assert isinstance(d6.action, io.CreateSubnet) and d6.action.ip_version == 6


def test_n6_subnet_of_another_cidr_or_network() -> None:
    for sub in (
        SUB.model_copy(update={"cidr": "10.9.0.0/24"}),
        SUB.model_copy(update={"network_id": "net-x"}),
    ):
        d = create(spec(), TARGET, seen(networks=[NET], subnets=[sub]))
        assert d.rule == "N6"
        failed(d, R.ERRORED, "osprov never changes it")


def test_n7_create_the_router_only_when_asked() -> None:
    d = create(spec(**ROUTED), TARGET, seen(networks=[NET], subnets=[SUB]))
    assert (
        d.rule == "N7" and isinstance(d.action, io.CreateRouter) and d.action.external_network_id == "ext-1"
    )
    assert create(spec(), TARGET, seen(networks=[NET], subnets=[SUB])).rule == "S1"


def test_n8_router_with_its_gateway_elsewhere() -> None:
    elsewhere = RTR.model_copy(update={"external_network_id": "ext-2"})
    d = create(spec(**ROUTED), TARGET, seen(networks=[NET], subnets=[SUB], routers=[elsewhere]))
    assert d.rule == "N8"
    failed(d, R.ERRORED, "gateway on ext-2")


def test_n9_plug_the_subnet_into_the_router() -> None:
    bare = RTR.model_copy(update={"interface_subnets": []})
    d = create(spec(**ROUTED), TARGET, seen(networks=[NET], subnets=[SUB], routers=[bare]))
    assert d.rule == "N9" and isinstance(d.action, io.RouterInterface)
    assert (d.action.router_id, d.action.subnet_id) == ("rtr-1", "sub-1")


def test_s1_all_present() -> None:
    d = create(spec(**ROUTED), TARGET, seen(networks=[NET], subnets=[SUB], routers=[RTR]))
    assert d.rule == "S1" and isinstance(d.action, Provisioned)


def test_s2_network_in_error() -> None:
    broken = NET.model_copy(update={"status": "ERROR"})
    d = create(spec(), TARGET, seen(networks=[broken], subnets=[SUB]))
    assert d.rule == "S2" and isinstance(d.action, Errored)


# --- delete -------------------------------------------------------------------------------------------
def test_delete_starts_with_a_read() -> None:
    d = delete(TARGET, Observation())
    assert d.rule == "D1" and isinstance(d.action, io.FindNetwork)


def test_d1_project_missing_is_done() -> None:
    d = delete(TARGET, Observation(lookup=io.NetworkLookup(project_found=False)))
    assert d.rule == "D1" and isinstance(d.action, Done)


def test_d2_duplicates() -> None:
    d = delete(TARGET, seen(networks=[NET, NET]))
    assert d.rule == "D2"
    failed(d, R.DEPROVISIONING, "operator must remove the extra")


def test_d3_remove_the_interface_first() -> None:
    d = delete(TARGET, seen(networks=[NET], subnets=[SUB], routers=[RTR], foreign_ports=3))
    assert d.rule == "D3" and isinstance(d.action, RemoveInterface)


def test_d4_then_the_router() -> None:
    bare = RTR.model_copy(update={"interface_subnets": []})
    d = delete(TARGET, seen(networks=[NET], subnets=[SUB], routers=[bare]))
    assert d.rule == "D4" and isinstance(d.action, io.DeleteObject) and d.action.kind == "router"


def test_d5_foreign_ports_wait_with_their_count() -> None:
    d = delete(TARGET, seen(networks=[NET], subnets=[SUB], foreign_ports=1))
    assert d.rule == "D5"
    failed(d, R.DEPROVISIONING, "still has 1 port osprov did not make")


def test_d6_then_the_subnet() -> None:
    d = delete(TARGET, seen(networks=[NET], subnets=[SUB]))
    assert d.rule == "D6" and isinstance(d.action, io.DeleteObject) and d.action.kind == "subnet"


def test_d7_then_the_network() -> None:
    d = delete(TARGET, seen(networks=[NET]))
    assert d.rule == "D7" and isinstance(d.action, io.DeleteObject)
    assert (d.action.kind, d.action.id) == ("network", "net-1")


def test_d8_nothing_left_is_done() -> None:
    d = delete(TARGET, seen())
    assert d.rule == "D8" and isinstance(d.action, Done)
