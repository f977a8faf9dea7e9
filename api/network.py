"""Network (neutron.osh.openstack.org/v1alpha1): a Neutron network and its subnet in a Keystone project, and
optionally a router from that subnet to an external network.

Contract: issue 18 and docs/network.md. Everything that identifies the Neutron objects is immutable (CEL on
the spec): a different CIDR or router is a new Network, never an in-place re-plumbing of a live network.
A provider (VLAN) network names only its physical network: the VLAN ID comes from osprov's allocator within
the range the operator configured, and the schema has no field through which an author could choose one.
"""

from __future__ import annotations

import ipaddress

from pydantic import ConfigDict, Field, field_validator

from osprov.api.common import CLOUD_SPEC_RULES, CamelModel, CloudSpec, CloudStatus
from osprov.api.limits import immutable_if_set

# The API group of the Neutron kinds (a SecurityGroup kind shares it: api/security_group.py).
NEUTRON_GROUP = "neutron.osh.openstack.org"

SUBNET_IMMUTABLE_MESSAGE = "spec.subnet cannot change: create a new Network for another address range"
ROUTER_IMMUTABLE_MESSAGE = (
    "spec.router cannot be added, removed or changed: create a new Network with the router you want"
)
PROVIDER_IMMUTABLE_MESSAGE = (
    "spec.provider cannot be added, removed or changed: a network's segment is fixed when it is made"
)
PHYSNET_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"


class SubnetSpec(CamelModel):
    """The network's one subnet, named subnet-{metadata.uid}."""

    cidr: str = Field(
        min_length=9,
        max_length=43,
        description="The subnet's address range in CIDR notation (IPv4 or IPv6), e.g. 10.0.0.0/24; host bits "
        "must be zero. Immutable.",
    )
    enable_dhcp: bool = Field(
        default=True, alias="enableDHCP", description="Whether Neutron serves DHCP on the subnet."
    )

    @field_validator("cidr")
    @classmethod
    def _cidr(cls, value: str) -> str:
        try:
            ipaddress.ip_network(value, strict=True)
        except ValueError as exc:
            raise ValueError(f"spec.subnet.cidr {value!r} is not a network in CIDR notation: {exc}") from None
        return value

    def ip_version(self) -> int:
        return ipaddress.ip_network(self.cidr).version


class RouterSpec(CamelModel):
    """A router named router-{metadata.uid}, with its gateway on the external network and an interface on the
    subnet."""

    external_network_id: str = Field(
        alias="externalNetworkID",
        min_length=1,
        max_length=64,
        description="ID of the external Neutron network (router:external) the router's gateway is on.",
    )


class ProviderSpec(CamelModel):
    """A VLAN provider network: Neutron gets the physical network and a VLAN ID that osprov allocates from
    the operator's range for it (docs/network.md, "Provider networks")."""

    physical_network: str = Field(
        alias="physicalNetwork",
        pattern=PHYSNET_PATTERN,
        description="The physical network (e.g. physnet1): the operator's mapping must allow it for this "
        "namespace. The VLAN ID is allocated by osprov, never chosen here.",
    )


class NetworkSpec(CloudSpec):
    """A Neutron network named network-{metadata.uid} in its Identity's project (or spec.project)."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                *CLOUD_SPEC_RULES,
                {"rule": "self.subnet == oldSelf.subnet", "message": SUBNET_IMMUTABLE_MESSAGE},
                immutable_if_set("router", ROUTER_IMMUTABLE_MESSAGE),
                immutable_if_set("provider", PROVIDER_IMMUTABLE_MESSAGE),
            ]
        }
    )

    subnet: SubnetSpec = Field(description="The network's subnet. Immutable.")
    router: RouterSpec | None = Field(
        default=None,
        description="Route the subnet to an external network through a router of its own. Immutable.",
    )
    provider: ProviderSpec | None = Field(
        default=None,
        description="Make a VLAN provider network on this physical network (only where the operator "
        "allows it for this namespace). Unset: a tenant network of Neutron's default type. Immutable.",
    )


class NetworkStatus(CloudStatus):
    network_id: str | None = Field(default=None, alias="networkID", description="ID of the Neutron network.")
    subnet_id: str | None = Field(default=None, alias="subnetID", description="ID of the Neutron subnet.")
    router_id: str | None = Field(default=None, alias="routerID", description="ID of the Neutron router.")
    segmentation_id: int | None = Field(
        default=None, alias="segmentationID", description="The VLAN ID of a provider network."
    )
