"""The Network passes as pure decision tables (issue 18; the tables below and docs/network.md).

No I/O and no Temporal: workflows/network.py starts a pass with an empty `Observation`, asks `create` (N1…N9)
or `delete` (D1…D8) for the next step, executes it, folds the result in and asks again until a decision ends
the pass. Every pass starts from a fresh read of the three objects by their deterministic names (exact-name
post-filter in the activity), so a crash between "created" and "status written" adopts what was made
instead of duplicating it; each create is itself create-if-absent by the same name.

Create (reconcile):
  N1 project missing in Keystone       -> Available=False/Provisioning "project … does not exist yet", retried
  N2 two or more exact-name matches of the network, subnet or router -> Available=False/Errored, retried
  N3 no network                        -> create network-{uid} (a provider network: with its VLAN segment)
  N4 the network exists but is not the one asked for (a provider network of another segment, or a
     tenant network where a provider one is asked) -> Available=False/Errored, retried (never changed)
  N5 no subnet                         -> create subnet-{uid} on the network
  N6 the subnet is on another network, or of another CIDR -> Available=False/Errored, retried
  N7 router asked, none                -> create router-{uid} with its gateway on the external network
  N8 router's gateway on another network -> Available=False/Errored, retried (never changed)
  N9 router without an interface on the subnet -> add it
Observe:
  S1 all present, network not ERROR    -> Available=True/Provisioned; status networkID, subnetID, routerID
  S2 network status ERROR              -> Available=False/Errored (Neutron's details: worker log)
Delete (finalize, deletionPolicy=delete):
  D1 project missing in Keystone       -> done: nothing can have been created
  D2 two or more exact-name matches    -> fail Deprovisioning (an operator removes the extra), retried
  D3 router with an interface on the subnet -> remove the interface, re-read
  D4 router                            -> delete it, re-read
  D5 ports on the network osprov did not make -> fail Deprovisioning "… N port(s) …", retried; they are
                                          never deleted by osprov
  D6 subnet                            -> delete it, re-read
  D7 network                           -> delete it, re-read
  D8 none of the three                 -> done (also how the deletes are confirmed)
"""

from __future__ import annotations

from dataclasses import dataclass

from osprov.api import network_io as io
from osprov.api.cinder_io import ProjectScope
from osprov.api.common import AvailableReason
from osprov.api.network import NetworkSpec


@dataclass(frozen=True)
class Observation:
    lookup: io.NetworkLookup | None = None  # this pass's read (with what this pass created folded in)


@dataclass(frozen=True)
class Provisioned:
    """S1: Available=True."""

    message: str


@dataclass(frozen=True)
class Errored:
    """S2: the network is in Neutron's ERROR state."""

    network: io.NetworkView


@dataclass(frozen=True)
class Fail:
    """The pass cannot finish: the message says what to fix; retried with backoff."""

    message: str
    reason: AvailableReason


@dataclass(frozen=True)
class Done:
    """Deleted (or nothing could have been created)."""


Call = (
    io.FindNetwork
    | io.CreateNetwork
    | io.CreateSubnet
    | io.CreateRouter
    | io.RouterInterface
    | io.DeleteObject
)


@dataclass(frozen=True)
class RemoveInterface:
    """D3: remove the router's interface on the subnet (the request)."""

    request: io.RouterInterface


Action = Call | RemoveInterface | Provisioned | Errored | Fail | Done


@dataclass(frozen=True)
class Decision:
    rule: str  # step label, e.g. "N3"
    action: Action
    what: str  # a sentence: the step (query, Web UI details) and the call's summary

    @property
    def step(self) -> str:
        return f"{self.rule}: {self.what}"


@dataclass(frozen=True)
class Target:
    """Who the objects belong to: their deterministic names, the description written on them, and the
    project (and credential) every call is scoped to (workflows/tenancy.py). `segment`: the VLAN segment a
    provider network is made with (allocated before N3); `admin`: its calls run on the controller's
    credentials for project `project_id` (the operator allowed it)."""

    names: io.Names
    description: str
    scope: ProjectScope
    segment: io.Segment | None = None
    admin: bool = False
    project_id: str | None = None


def _where(target: Target) -> str:
    return f"project {target.scope.project!r} in domain {target.scope.domain!r}"


def _find(target: Target, rule: str) -> Decision:
    find = io.FindNetwork(
        scope=target.scope, names=target.names, admin=target.admin, project_id=target.project_id
    )
    return Decision(rule, find, f"find network {target.names.network} in {_where(target)}")


def _duplicates(lookup: io.NetworkLookup, reason: AvailableReason, rule: str) -> Decision | None:
    for what, found in (
        ("networks", lookup.networks),
        ("subnets", lookup.subnets),
        ("routers", lookup.routers),
    ):
        if len(found) > 1:
            # Fail closed: which one is in use is for an operator to decide, never a guess.
            message = (
                f"{len(found)} Neutron {what} are named {found[0].name}; osprov acts only on a unique match, "
                "so an operator must remove the extra one(s) — retrying"
            )
            return Decision(
                rule, Fail(message, reason), f"more than one Neutron {what[:-1]} is named {found[0].name}"
            )
    return None


def _segment_mismatch(spec: NetworkSpec, target: Target, net: io.NetworkView) -> str | None:
    """Why the existing network is not the one asked for (None: it is)."""
    seg = target.segment
    if spec.provider is None:
        if net.network_type == "vlan":
            return f"network {net.name} is a VLAN provider network, but spec.provider is unset"
        return None
    if seg is None:  # a provider network adopted before its allocation is known: never compared blind
        return None
    if (net.physical_network, net.segmentation_id) != (seg.physical_network, seg.segmentation_id):
        return (
            f"network {net.name} is on {net.physical_network or 'no physical network'} segment "
            f"{net.segmentation_id}, not VLAN {seg.segmentation_id} on {seg.physical_network} as allocated"
        )
    return None


# --- create (N1…N9) and observe (S1, S2) -------------------------------------------------------------
def create(spec: NetworkSpec, target: Target, obs: Observation) -> Decision:
    """The next step of the create pass."""
    look = obs.lookup
    if look is None:
        return _find(target, "N1")
    if not look.project_found:
        message = (
            f"{_where(target)} does not exist in Keystone yet; create it (for example with a Project "
            "resource) — retrying"
        )
        return Decision("N1", Fail(message, AvailableReason.PROVISIONING), "the project does not exist yet")
    dup = _duplicates(look, AvailableReason.ERRORED, "N2")
    if dup is not None:
        return dup
    names = target.names
    if not look.networks:
        make = io.CreateNetwork(
            scope=target.scope,
            name=names.network,
            description=target.description,
            segment=target.segment,
            project_id=target.project_id if target.admin else None,
        )
        on = (
            f" (VLAN {target.segment.segmentation_id} on {target.segment.physical_network})"
            if target.segment
            else ""
        )
        return Decision("N3", make, f"create network {names.network}{on}")
    net = look.networks[0]
    mismatch = _segment_mismatch(spec, target, net)
    if mismatch is not None:
        message = (
            f"{mismatch}; osprov never changes a network's segment: delete the Network and create it again"
        )
        return Decision("N4", Fail(message, AvailableReason.ERRORED), "the network is not the one asked for")
    if not look.subnets:
        sub = spec.subnet
        make_subnet = io.CreateSubnet(
            scope=target.scope,
            name=names.subnet,
            network_id=net.id,
            cidr=sub.cidr,
            ip_version=4 if sub.ip_version() == 4 else 6,
            enable_dhcp=sub.enable_dhcp,
            description=target.description,
        )
        return Decision("N5", make_subnet, f"create subnet {names.subnet} ({sub.cidr})")
    subnet = look.subnets[0]
    if subnet.network_id != net.id or subnet.cidr != spec.subnet.cidr:
        message = (
            f"subnet {subnet.name} is {subnet.cidr} on network {subnet.network_id}, not {spec.subnet.cidr} on "
            f"{net.id}; osprov never changes it: remove it (or delete the Network) — retrying"
        )
        return Decision("N6", Fail(message, AvailableReason.ERRORED), "the subnet is not the one asked for")
    if spec.router is not None:
        ext = spec.router.external_network_id
        if not look.routers:
            make_router = io.CreateRouter(
                scope=target.scope, name=names.router, external_network_id=ext, description=target.description
            )
            return Decision("N7", make_router, f"create router {names.router} with its gateway on {ext}")
        router = look.routers[0]
        if router.external_network_id != ext:
            message = (
                f"router {router.name} has its gateway on {router.external_network_id or 'no network'}, not "
                f"{ext}; osprov never changes it: delete the Network and create it again — retrying"
            )
            return Decision(
                "N8", Fail(message, AvailableReason.ERRORED), "the router is not the one asked for"
            )
        if subnet.id not in router.interface_subnets:
            plug = io.RouterInterface(scope=target.scope, router_id=router.id, subnet_id=subnet.id)
            return Decision("N9", plug, f"add an interface on subnet {names.subnet} to router {names.router}")
    return observe(net)


def observe(net: io.NetworkView) -> Decision:
    """S1, S2: what the network's Neutron status means for the resource."""
    if net.status == io.ERROR_STATUS:
        return Decision("S2", Errored(net), "the network is in an error state (details in the worker log)")
    message = "Neutron network and subnet are ready"
    return Decision("S1", Provisioned(message), message)


# --- delete (D1…D8) -------------------------------------------------------------------------------------
def delete(target: Target, obs: Observation) -> Decision:
    """The next step of the delete pass: the router's interface, the router, the subnet, the network, in
    that order, each confirmed by a fresh read (D8)."""
    look = obs.lookup
    if look is None:
        return _find(target, "D1")
    if not look.project_found:
        return Decision("D1", Done(), "the project does not exist: nothing can have been created")
    dup = _duplicates(look, AvailableReason.DEPROVISIONING, "D2")
    if dup is not None:
        return dup
    names, scope = target.names, target.scope
    subnet = look.subnets[0] if look.subnets else None
    if look.routers:
        router = look.routers[0]
        if subnet is not None and subnet.id in router.interface_subnets:
            unplug = io.RouterInterface(scope=scope, router_id=router.id, subnet_id=subnet.id)
            return Decision(
                "D3", RemoveInterface(unplug), f"remove router {names.router}'s interface on the subnet"
            )
        gone = io.DeleteObject(scope=scope, kind="router", id=router.id)
        return Decision("D4", gone, f"delete router {names.router}")
    if look.networks and look.foreign_ports:
        n = look.foreign_ports
        message = (
            f"network {names.network} still has {n} port{'s' if n != 1 else ''} osprov did not make (servers, "
            "load balancers or ports of other tools); osprov never deletes them: remove them and deletion "
            "continues — waiting"
        )
        return Decision(
            "D5", Fail(message, AvailableReason.DEPROVISIONING), f"{n} foreign port(s) on the network"
        )
    if subnet is not None:
        return Decision(
            "D6", io.DeleteObject(scope=scope, kind="subnet", id=subnet.id), f"delete subnet {names.subnet}"
        )
    if look.networks:
        net = look.networks[0]
        return Decision(
            "D7", io.DeleteObject(scope=scope, kind="network", id=net.id), f"delete network {names.network}"
        )
    return Decision("D8", Done(), f"network {names.network}, its subnet and router are gone")
