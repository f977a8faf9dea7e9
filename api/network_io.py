"""Inputs and outputs of the Neutron activities of the Network kind (the contract between workflows/network.py
and activities/network.py).

Pure pydantic and the standard library: workflows import this module inside Temporal's sandbox. Also the
convention both sides (and other kinds that attach to a Network later) agree on: the deterministic names.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from osprov.api.activity import Activity
from osprov.api.cinder_io import ProjectScope

# Device owners of ports Neutron makes for itself on a network: removed with the subnet, never "foreign".
NEUTRON_OWNED_PORTS = frozenset({"network:dhcp"})
ROUTER_INTERFACE_OWNER = "network:router_interface"
ERROR_STATUS = "ERROR"


def network_name(uid: str) -> str:
    """The Neutron name of the Network resource with this UID (its stable identity); a Server or a
    LoadBalancer that names a Network finds it by this name, with an exact-name post-filter."""
    return f"network-{uid}"


def subnet_name(uid: str) -> str:
    return f"subnet-{uid}"


def router_name(uid: str) -> str:
    return f"router-{uid}"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Segment(_Model):
    """A VLAN provider segment: the physical network and the VLAN ID osprov's allocator gave the Network."""

    physical_network: str
    segmentation_id: int = Field(ge=1, le=4094)


class Names(_Model):
    network: str
    subnet: str
    router: str


class FindNetwork(_Model):
    """Read the Network's three objects by their exact names (one activity: one read per pass).

    `admin`: the network is read with the controller's credentials, filtered to project `project_id` (only
    they see a provider network's segment); the subnet, router and ports always with the scope's."""

    scope: ProjectScope
    names: Names
    admin: bool = False
    project_id: str | None = None


class NetworkView(_Model):
    id: str
    name: str
    status: str
    network_type: str | None = None
    physical_network: str | None = None
    segmentation_id: int | None = None


class SubnetView(_Model):
    id: str
    name: str
    network_id: str
    cidr: str


class RouterView(_Model):
    id: str
    name: str
    external_network_id: str | None = None
    interface_subnets: list[str] = Field(default_factory=list)  # subnet IDs of its interfaces, sorted


class NetworkLookup(_Model):
    """Exact-name matches sorted by ID. project_found=False: the project does not exist in Keystone.
    foreign_ports: ports on the (single) network that neither Neutron (DHCP) nor this Network's router made."""

    project_found: bool
    project_id: str | None = None
    networks: list[NetworkView] = Field(default_factory=list)
    subnets: list[SubnetView] = Field(default_factory=list)
    routers: list[RouterView] = Field(default_factory=list)
    foreign_ports: int = 0


class CreateNetwork(_Model):
    """Create-if-absent by exact name. With `segment`, a VLAN provider network made with the controller's
    credentials for project `project_id` (admin power, only where the operator's mapping allows it)."""

    scope: ProjectScope
    name: str
    description: str = ""
    segment: Segment | None = None
    project_id: str | None = None


class CreateSubnet(_Model):
    scope: ProjectScope
    name: str
    network_id: str
    cidr: str
    ip_version: Literal[4, 6] = 4
    enable_dhcp: bool = True
    description: str = ""


class CreateRouter(_Model):
    scope: ProjectScope
    name: str
    external_network_id: str
    description: str = ""


class RouterInterface(_Model):
    """Add (or remove) the router's interface on the subnet; idempotent both ways."""

    scope: ProjectScope
    router_id: str
    subnet_id: str


NeutronObject = Literal["network", "subnet", "router"]


class DeleteObject(_Model):
    scope: ProjectScope
    kind: NeutronObject
    id: str


class DeleteResult(_Model):
    outcome: Literal["deleted", "absent"]


# --- activities: the typed contracts (osprov.api.activity) -----------------------------------------
FIND_NETWORK: Activity[FindNetwork, NetworkLookup] = Activity(
    "neutron.find_network", FindNetwork, NetworkLookup
)
CREATE_NETWORK: Activity[CreateNetwork, NetworkView] = Activity(
    "neutron.create_network", CreateNetwork, NetworkView
)
CREATE_SUBNET: Activity[CreateSubnet, SubnetView] = Activity(
    "neutron.create_subnet", CreateSubnet, SubnetView
)
CREATE_ROUTER: Activity[CreateRouter, RouterView] = Activity(
    "neutron.create_router", CreateRouter, RouterView
)
ADD_ROUTER_INTERFACE: Activity[RouterInterface, RouterView] = Activity(
    "neutron.add_router_interface", RouterInterface, RouterView
)
REMOVE_ROUTER_INTERFACE: Activity[RouterInterface, bool] = Activity(
    "neutron.remove_router_interface", RouterInterface, bool
)
DELETE_OBJECT: Activity[DeleteObject, DeleteResult] = Activity(
    "neutron.delete_object", DeleteObject, DeleteResult
)
