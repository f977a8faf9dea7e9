"""Volume, LoadBalancer and Server: models and the CRDs' admission rules (CEL, incl. transition rules)."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from osprov.api.cinder import VolumeSpec, VolumeStatus
from osprov.api.nova import (
    NETWORK_CHOICE_MESSAGE,
    NETWORKS_IMMUTABLE_MESSAGE,
    SECURITY_GROUPS_IMMUTABLE_MESSAGE,
    RebuildMarker,
    RebuildState,
    ServerPhase,
    ServerSpec,
    ServerStatus,
)
from osprov.api.octavia import VIP_NETWORK_CHOICE_MESSAGE, LoadBalancerSpec
from osprov.api.registry import CLOUD_KINDS, kind_info
from tests.api.schema_check import violations
from tests.api.test_crds import spec_schema

PROJECT = {"name": "osprov-demo", "domain": "Default"}


def _error(model: type[BaseModel], data: dict[str, Any]) -> str:
    with pytest.raises(ValidationError) as caught:
        model.model_validate(data)
    return str(caught.value)


def _update(kind: str, old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """CEL messages an update from `old` to `new` spec is rejected with."""
    return [message.split(": ", 1)[1] for message in violations(spec_schema(kind), new, old)]


# --- Volume ---------------------------------------------------------------------------------------------

VOLUME = {"project": PROJECT, "size": 1, "volumeClassID": "t-1", "tags": {"app": "demo"}}


def test_volume_round_trip_and_defaults() -> None:
    spec = VolumeSpec.model_validate(VOLUME)
    assert spec.volume_class_id == "t-1" and spec.deletion_policy == "retain"
    assert spec.to_k8s() == {
        **VOLUME,
        "deletionPolicy": "retain",
        "managementPolicy": "managed",
        "approvalPolicy": "automatic",
    }
    assert VolumeSpec.model_validate({"project": PROJECT, "size": 2}).tags == {}
    status = VolumeStatus(size=1, volume_id="v-1")
    assert status.to_k8s() == {"conditions": [], "size": 1, "volumeID": "v-1"}


def test_volume_size_must_be_whole_positive_gib() -> None:
    assert "greater than or equal to 1" in _error(VolumeSpec, {**VOLUME, "size": 0})
    assert "size" in _error(VolumeSpec, {**VOLUME, "size": 1.5})


def test_volume_size_grows_but_class_and_project_are_immutable() -> None:
    assert _update("Volume", VOLUME, {**VOLUME, "tags": {"app": "other"}}) == []
    assert _update("Volume", VOLUME, {**VOLUME, "size": 2}) == []  # extended in place
    assert _update("Volume", {**VOLUME, "size": 2}, VOLUME) == [
        "spec.size cannot shrink: Cinder only extends a volume; keep the current size, or copy the data to a "
        "new, smaller Volume"
    ]
    retype = "spec.volumeClassID cannot change: retyping a volume is not supported; create a new Volume"
    assert _update("Volume", VOLUME, {**VOLUME, "volumeClassID": "t-2"}) == [retype]
    untyped = {k: v for k, v in VOLUME.items() if k != "volumeClassID"}
    assert _update("Volume", VOLUME, untyped) == [retype]
    assert _update("Volume", untyped, VOLUME) == [retype]
    moved = {**VOLUME, "project": {"name": "other", "domain": "Default"}}
    assert _update("Volume", VOLUME, moved) == [
        "spec.project cannot change: the object lives in its project; create a new resource"
    ]


# --- LoadBalancer ---------------------------------------------------------------------------------------

HTTP = {
    "name": "http",
    "protocol": "TCP",
    "port": 80,
    "allowedCIDRs": ["10.0.0.0/8"],
    "idleTimeoutSeconds": 60,
    "pool": {"proxyProtocolV2": False, "members": [{"address": "10.0.0.11", "port": 8080}]},
    "healthCheck": {"delaySeconds": 5, "timeoutSeconds": 3, "healthyThreshold": 2, "unhealthyThreshold": 3},
}
DNS = {
    "name": "dns",
    "protocol": "UDP",
    "port": 53,
    "pool": {"members": [{"address": "10.0.0.12", "port": 53}]},
}
LB = {"project": PROJECT, "vipNetworkID": "net-1", "publicIP": True, "listeners": [HTTP, DNS]}


def _with_listener(lb: dict[str, Any], index: int, **changes: Any) -> dict[str, Any]:
    new = copy.deepcopy(lb)
    new["listeners"][index].update(changes)
    return new


def test_load_balancer_valid_spec() -> None:
    spec = LoadBalancerSpec.model_validate(LB)
    assert [listener.name for listener in spec.listeners] == ["http", "dns"]
    assert spec.listeners[1].pool.proxy_protocol_v2 is False and spec.public_ip is True
    assert spec.to_k8s()["listeners"][0]["allowedCIDRs"] == ["10.0.0.0/8"]
    assert violations(spec_schema("LoadBalancer"), LB) == []


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"idleTimeoutSeconds": 30}, "UDP listeners take no idleTimeoutSeconds"),
        ({"pool": {"proxyProtocolV2": True}}, "UDP listeners cannot use pool.proxyProtocolV2"),
    ],
)
def test_udp_limits_rejected_by_model_and_crd(changes: dict[str, Any], message: str) -> None:
    bad = _with_listener(LB, 1, **changes)
    assert message in _error(LoadBalancerSpec, bad)
    assert [m.split(": ", 1)[1] for m in violations(spec_schema("LoadBalancer"), bad)] == [message]


def test_listener_protocol_port_and_proxy_are_immutable_per_name() -> None:
    key_message = "the protocol and port of an existing listener cannot change; give the listener a new name to replace it"
    assert _update("LoadBalancer", LB, _with_listener(LB, 0, port=8080)) == [key_message]
    assert _update("LoadBalancer", LB, _with_listener(LB, 1, protocol="TCP")) == [key_message]
    proxied = _with_listener(LB, 0, pool={"proxyProtocolV2": True, "members": []})
    assert _update("LoadBalancer", LB, proxied)[0].startswith("pool.proxyProtocolV2 of an existing listener")
    # allowed: in-place changes, a renamed listener (replacement), a new listener, removing one
    assert _update("LoadBalancer", LB, _with_listener(LB, 0, allowedCIDRs=[], idleTimeoutSeconds=120)) == []
    assert _update("LoadBalancer", LB, _with_listener(LB, 0, name="web", port=8080)) == []
    assert _update("LoadBalancer", LB, {**LB, "listeners": [HTTP]}) == []
    https = {"name": "https", "protocol": "TCP", "port": 443, "pool": {"proxyProtocolV2": True}}
    assert _update("LoadBalancer", LB, {**LB, "listeners": [HTTP, DNS, https]}) == []


def test_two_listeners_cannot_share_protocol_and_port() -> None:
    clash = {**LB, "listeners": [HTTP, {**DNS, "protocol": "TCP", "port": 80}]}
    assert "two listeners cannot use the same protocol and port" in _error(LoadBalancerSpec, clash)
    assert violations(spec_schema("LoadBalancer"), clash)[0].endswith(
        "two listeners cannot use the same protocol and port"
    )
    same_port_other_protocol = {**LB, "listeners": [HTTP, {**DNS, "port": 80}]}
    assert violations(spec_schema("LoadBalancer"), same_port_other_protocol) == []


def test_load_balancer_field_errors() -> None:
    slow = _with_listener(LB, 0, healthCheck={**HTTP["healthCheck"], "timeoutSeconds": 10})  # type: ignore[dict-item]
    assert "timeoutSeconds must not exceed" in _error(LoadBalancerSpec, slow)
    bad_cidr = _error(LoadBalancerSpec, _with_listener(LB, 0, allowedCIDRs=["10.0.0.300/8"]))
    assert "listeners.0.allowedCIDRs.0" in bad_cidr and "must be an IPv4 or IPv6 CIDR" in bad_cidr
    assert "String should match pattern" in _error(LoadBalancerSpec, _with_listener(LB, 0, name="Web_1"))
    assert "'TCP' or 'UDP'" in _error(LoadBalancerSpec, _with_listener(LB, 0, protocol="HTTP"))


def test_load_balancer_vip_network_by_resource_name_or_id_never_both() -> None:
    by_name = {**{k: v for k, v in LB.items() if k != "vipNetworkID"}, "vipNetwork": "app"}
    spec = LoadBalancerSpec.model_validate(by_name)
    assert (spec.vip_network, spec.vip_network_id) == ("app", None)
    assert violations(spec_schema("LoadBalancer"), by_name) == []
    for wrong in ({**LB, "vipNetwork": "app"}, {k: v for k, v in LB.items() if k != "vipNetworkID"}):
        assert VIP_NETWORK_CHOICE_MESSAGE in _error(LoadBalancerSpec, wrong)
        found = [m.split(": ", 1)[1] for m in violations(spec_schema("LoadBalancer"), wrong)]
        assert found == [VIP_NETWORK_CHOICE_MESSAGE]  # the CRD's CEL, as admission runs it


# --- Server ---------------------------------------------------------------------------------------------

SERVER = {
    "project": PROJECT,
    "flavor": "m1.tiny",
    "imageID": "img-1",
    "networks": [{"networkID": "net-1"}],
    "keypair": "demo",
    "userData": "#cloud-config\n",
    "tags": {"app": "demo"},
    "volumes": [{"volume": "demo-data", "device": "/dev/vdb"}],
}


def test_server_round_trip_and_rules() -> None:
    spec = ServerSpec.model_validate(SERVER)
    assert spec.image_id == "img-1" and spec.volumes[0].volume == "demo-data"
    assert spec.to_k8s() == {
        **SERVER,
        "deletionPolicy": "retain",
        "managementPolicy": "managed",
        "approvalPolicy": "automatic",
        "securityGroups": [],
    }
    assert "String should match pattern" in _error(
        ServerSpec, {**SERVER, "volumes": [{"volume": "x", "device": "vdb"}]}
    )
    assert _update("Server", SERVER, {**SERVER, "imageID": "img-2", "tags": {}}) == []  # a rebuild, allowed
    assert _update("Server", SERVER, {**SERVER, "flavor": "m1.small"}) == []  # a resize, allowed
    moved = {**SERVER, "networks": [{"networkID": "net-other"}]}
    assert _update("Server", SERVER, moved) == [NETWORKS_IMMUTABLE_MESSAGE]
    bare = {k: v for k, v in SERVER.items() if k != "networks"}
    assert _update("Server", bare, SERVER) == [NETWORKS_IMMUTABLE_MESSAGE]  # added after create
    assert _update("Server", bare, {**bare, "networks": []}) == []  # absent and empty mean the same
    grouped = {**SERVER, "securityGroups": ["web"]}
    assert _update("Server", grouped, {**SERVER, "securityGroups": ["db"]}) == [
        SECURITY_GROUPS_IMMUTABLE_MESSAGE
    ]
    assert _update("Server", SERVER, grouped) == [SECURITY_GROUPS_IMMUTABLE_MESSAGE]  # added after create


def test_server_network_by_resource_name_or_id_never_both() -> None:
    named = {**SERVER, "networks": [{"network": "app"}, {"networkID": "net-1"}]}
    spec = ServerSpec.model_validate(named)
    assert [(n.network, n.network_id) for n in spec.networks] == [("app", None), (None, "net-1")]
    assert spec.to_k8s()["networks"] == named["networks"]
    for wrong in ({}, {"network": "app", "networkID": "net-1"}):
        assert NETWORK_CHOICE_MESSAGE in _error(ServerSpec, {**SERVER, "networks": [wrong]})
        created = [
            m.split(": ", 1)[1] for m in violations(spec_schema("Server"), {**SERVER, "networks": [wrong]})
        ]
        assert created == [NETWORK_CHOICE_MESSAGE]  # the CRD's CEL, as admission runs it
    assert "String should match pattern" in _error(ServerSpec, {**SERVER, "securityGroups": ["Not_A_Name"]})


def test_server_status_wire_names() -> None:
    status = ServerStatus(
        phase=ServerPhase.BUILDING,
        launched_at=datetime(2026, 8, 24, 19, 20, 1, 500, tzinfo=UTC),
        mac_address="fa:16:3e:00:00:01",
        rebuild=RebuildMarker(target_image_id="img-2", state=RebuildState.INITIATED),
        server_id="s-1",
    )
    wire = status.to_k8s()
    assert wire["launchedAt"] == "2026-08-24T19:20:01Z"
    assert wire["rebuild"] == {"targetImageID": "img-2", "state": "Initiated"}
    assert (wire["phase"], wire["serverID"], wire["macAddress"]) == ("Building", "s-1", "fa:16:3e:00:00:01")
    assert ServerStatus.model_validate(wire).rebuild == status.rebuild


def test_registry_entries_of_the_cloud_kinds() -> None:
    assert [(k.kind, k.group, k.id_field) for k in CLOUD_KINDS] == [
        ("Volume", "cinder.osh.openstack.org", "volumeID"),
        ("LoadBalancer", "octavia.osh.openstack.org", "loadBalancerID"),
        ("Server", "nova.osh.openstack.org", "serverID"),
        ("Network", "neutron.osh.openstack.org", "networkID"),
        ("SecurityGroup", "neutron.osh.openstack.org", "securityGroupID"),
    ]
    assert {k.ready_condition for k in CLOUD_KINDS} == {"Available"}
    assert kind_info("LoadBalancer").id_attribute == "load_balancer_id"
