"""Inputs and outputs of the Octavia and Neutron (floating IP) activities.

The contract between workflows/loadbalancer.py and activities/octavia.py + activities/neutron.py. Pure
pydantic: workflows import it inside Temporal's sandbox. Every call is scoped to the resource's project
(`Scope`): the Identity's application credential, or a project-scoped connection, never admin authority.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from osprov.api.activity import Activity
from osprov.api.identity_io import Credential

# Activity names (the workflow calls these strings; the activity modules register them).

# Octavia microversion the load-balancer client pins: PROXYV2 pools exist from 2.22 on.
OCTAVIA_MICROVERSION = "2.22"
LB_ALGORITHM = "ROUND_ROBIN"

ACTIVE = "ACTIVE"
PENDING = frozenset({"PENDING_CREATE", "PENDING_UPDATE", "PENDING_DELETE"})

ObjectKind = Literal["loadbalancer", "listener", "pool", "healthmonitor"]
ListenerProtocol = Literal["TCP", "UDP"]
PoolProtocol = Literal["TCP", "UDP", "PROXYV2"]
MonitorType = Literal["TCP", "UDP-CONNECT"]


# --- deterministic names: the linkage contract (never rename) ------------------------------------------
def lb_name(uid: str) -> str:
    return f"lb-{uid}"


def listener_name(uid: str, listener: str) -> str:
    return f"lb-{uid}-{listener}-listener"


def pool_name(uid: str, listener: str) -> str:
    return f"lb-{uid}-{listener}-pool"


def monitor_name(uid: str, listener: str) -> str:
    return f"lb-{uid}-{listener}-monitor"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Scope(_Model):
    """The Keystone project every call is scoped to: with `credential`, its Identity's application credential
    makes the calls; without, the controller's credentials re-scoped to it (spec.project, where mapped)."""

    project: str
    domain: str
    credential: Credential | None = None


# --- observations ---------------------------------------------------------------------------------------
class LoadBalancerView(_Model):
    id: str
    name: str
    provisioning_status: str
    vip_address: str | None = None
    vip_port_id: str | None = None


class ListenerView(_Model):
    id: str
    name: str
    provisioning_status: str
    protocol: str
    port: int
    allowed_cidrs: list[str] = Field(default_factory=list)
    default_pool_id: str | None = None
    timeout_client_data: int | None = None  # milliseconds
    timeout_member_data: int | None = None  # milliseconds


class PoolView(_Model):
    id: str
    name: str
    provisioning_status: str
    protocol: str
    lb_algorithm: str


class MemberView(_Model):
    id: str
    address: str
    port: int
    provisioning_status: str


class MonitorView(_Model):
    id: str
    name: str
    provisioning_status: str
    type: str
    pool_id: str | None = None
    delay: int
    timeout: int
    max_retries: int
    max_retries_down: int


class FloatingIpView(_Model):
    id: str
    address: str
    port_id: str | None = None


# --- requests -------------------------------------------------------------------------------------------
class FindLoadBalancer(_Model):
    """Every load balancer of the project named exactly `name` (the filter is post-checked)."""

    scope: Scope
    name: str


class KnownTopology(_Model):
    """What the last read found: the load balancer's ID and VIP port, and its pools' IDs by name. Only a
    guess at what the next read will find (never a decision's input): it lets that read make all its calls
    at once instead of in three rounds, each needing the IDs the one before found."""

    load_balancer_id: str
    vip_port_id: str
    pools: dict[str, str] = {}  # pool name -> ID


class ReadTopology(_Model):
    """P1, R1 and R2 in one activity (one round trip instead of three): the load balancers named exactly
    `name`; when exactly one is ACTIVE with a VIP port, also its children named `prefix`…, the floating IPs
    on its VIP port, and the members of its pools named in `pools` (the spec's own). With `known`, every
    call is made at once; what the fresh lookup contradicts is read again (activities/octavia.py)."""

    scope: Scope
    name: str
    prefix: str
    pools: tuple[str, ...] = ()
    known: KnownTopology | None = None


class Topology(_Model):
    """What ReadTopology read; the tree and members are None when they were not read."""

    found: list[LoadBalancerView]
    listeners: list[ListenerView] | None = None
    pools: list[PoolView] | None = None
    monitors: list[MonitorView] | None = None
    floating_ips: list[FloatingIpView] | None = None
    members: dict[str, list[MemberView]] | None = None  # pool ID -> members


class AwaitLoadBalancer(_Model):
    """Read the load balancer by ID every `interval_seconds` until Octavia settles it (ACTIVE or ERROR; with
    `gone`: until it no longer exists) or `within_seconds` pass; the answer is the last read ([]: gone)."""

    scope: Scope
    id: str
    gone: bool = False
    interval_seconds: float = 0.2
    within_seconds: float = 60.0
    # When the workflow last saw it busy (the change it just made was answered): the first read is at once,
    # the second one interval after this time (activities/cloud.py, poll). None: every interval.
    busy_seen_at: datetime | None = None


class AwaitTopology(_Model):
    """`wait`, then (when Octavia settled the load balancer) `read`, the next pass's R0, in the same
    activity: one round trip per step instead of two.

    `members_of` (R0m): the step replaced these pools' members, and this pass's R0 found everything else
    converged, so once ACTIVE only these pools' members are read (one GET instead of R0's six or more);
    the answer's `found` is then the wait's own read by ID. A pool that is gone, or a load balancer that
    is not ACTIVE, gets `read` instead."""

    wait: AwaitLoadBalancer
    read: ReadTopology
    members_of: list[str] | None = None  # pool IDs


class AwaitedTopology(_Model):
    """What R0 read once Octavia settled the load balancer; None: it did not settle within the wait."""

    topology: Topology | None = None


class FindImportedLoadBalancer(_Model):
    """spec.import of an unmanaged LoadBalancer: the project's load balancer with this ID, or every one of
    the project named exactly `name` (exactly one of the two). Another project's is not found."""

    scope: Scope
    id: str | None = None
    name: str | None = None


class CreateLoadBalancer(_Model):
    """Create-if-absent: an exact-name match is returned (adopted) instead of creating a second one."""

    scope: Scope
    name: str
    vip_network_id: str | None = None  # or vip_network
    vip_network: str | None = None  # a Network resource's name (in `namespace`), resolved by the create
    namespace: str = ""
    vip_subnet_id: str | None = None
    vip_address: str | None = None


class ListChildren(_Model):
    """Objects of one load balancer whose names start with `prefix` (lb-{uid}-)."""

    scope: Scope
    load_balancer_id: str
    prefix: str


class CreateListener(_Model):
    scope: Scope
    load_balancer_id: str
    name: str
    protocol: ListenerProtocol
    port: int
    default_pool_id: str
    allowed_cidrs: list[str] = Field(default_factory=list)
    timeout_client_data: int | None = None
    timeout_member_data: int | None = None


class UpdateListener(_Model):
    """PUT exactly these listener fields (unset: unchanged). An empty allowed_cidrs clears the list."""

    scope: Scope
    id: str
    allowed_cidrs: list[str] | None = None
    default_pool_id: str | None = None
    timeout_client_data: int | None = None
    timeout_member_data: int | None = None


class CreatePool(_Model):
    """A pool of the load balancer (linked to its listener by the listener's default_pool_id)."""

    scope: Scope
    load_balancer_id: str
    name: str
    protocol: PoolProtocol
    lb_algorithm: str = LB_ALGORITHM


class UpdatePool(_Model):
    scope: Scope
    id: str
    lb_algorithm: str


class PoolRef(_Model):
    scope: Scope
    pool_id: str


class Member(_Model):
    address: str
    port: int


class ReplaceMembers(_Model):
    """One batch update: the pool's members become exactly `members`."""

    scope: Scope
    pool_id: str
    members: list[Member]


class CreateMonitor(_Model):
    scope: Scope
    pool_id: str
    name: str
    type: MonitorType
    delay: int
    timeout: int
    max_retries: int
    max_retries_down: int


class UpdateMonitor(_Model):
    scope: Scope
    id: str
    delay: int
    timeout: int
    max_retries: int
    max_retries_down: int


class DeleteObject(_Model):
    """Delete one Octavia object by ID; cascade only for a load balancer. Already gone = False."""

    scope: Scope
    kind: ObjectKind
    id: str
    cascade: bool = False


class FindFloatingIps(_Model):
    scope: Scope
    port_id: str


class CreateFloatingIp(_Model):
    """Create-if-absent on the port, on the external network the worker is configured with."""

    scope: Scope
    port_id: str


class DeleteFloatingIp(_Model):
    scope: Scope
    id: str


# --- activities: the typed contracts (osprov.api.activity) -----------------------------------------
FIND_FLOATING_IPS: Activity[FindFloatingIps, list[FloatingIpView]] = Activity(
    "neutron.find_floating_ips", FindFloatingIps, list[FloatingIpView]
)
CREATE_FLOATING_IP: Activity[CreateFloatingIp, FloatingIpView] = Activity(
    "neutron.create_floating_ip", CreateFloatingIp, FloatingIpView
)
DELETE_FLOATING_IP: Activity[DeleteFloatingIp, bool] = Activity(
    "neutron.delete_floating_ip", DeleteFloatingIp, bool
)
FIND_LOAD_BALANCER: Activity[FindLoadBalancer, list[LoadBalancerView]] = Activity(
    "octavia.find_load_balancer", FindLoadBalancer, list[LoadBalancerView]
)
FIND_IMPORTED_LOAD_BALANCER: Activity[FindImportedLoadBalancer, list[LoadBalancerView]] = Activity(
    "octavia.find_imported_load_balancer", FindImportedLoadBalancer, list[LoadBalancerView]
)
READ_TOPOLOGY: Activity[ReadTopology, Topology] = Activity("octavia.read_topology", ReadTopology, Topology)
AWAIT_LOAD_BALANCER: Activity[AwaitLoadBalancer, list[LoadBalancerView]] = Activity(
    "octavia.await_load_balancer", AwaitLoadBalancer, list[LoadBalancerView]
)
AWAIT_TOPOLOGY: Activity[AwaitTopology, AwaitedTopology] = Activity(
    "octavia.await_topology", AwaitTopology, AwaitedTopology
)
CREATE_LOAD_BALANCER: Activity[CreateLoadBalancer, LoadBalancerView] = Activity(
    "octavia.create_load_balancer", CreateLoadBalancer, LoadBalancerView
)
LIST_LISTENERS: Activity[ListChildren, list[ListenerView]] = Activity(
    "octavia.list_listeners", ListChildren, list[ListenerView]
)
CREATE_LISTENER: Activity[CreateListener, ListenerView] = Activity(
    "octavia.create_listener", CreateListener, ListenerView
)
UPDATE_LISTENER: Activity[UpdateListener, ListenerView] = Activity(
    "octavia.update_listener", UpdateListener, ListenerView
)
LIST_POOLS: Activity[ListChildren, list[PoolView]] = Activity(
    "octavia.list_pools", ListChildren, list[PoolView]
)
CREATE_POOL: Activity[CreatePool, PoolView] = Activity("octavia.create_pool", CreatePool, PoolView)
UPDATE_POOL: Activity[UpdatePool, PoolView] = Activity("octavia.update_pool", UpdatePool, PoolView)
LIST_MEMBERS: Activity[PoolRef, list[MemberView]] = Activity(
    "octavia.list_members", PoolRef, list[MemberView]
)
REPLACE_MEMBERS: Activity[ReplaceMembers, None] = Activity(
    "octavia.replace_members", ReplaceMembers, type(None)
)
LIST_MONITORS: Activity[ListChildren, list[MonitorView]] = Activity(
    "octavia.list_monitors", ListChildren, list[MonitorView]
)
CREATE_MONITOR: Activity[CreateMonitor, MonitorView] = Activity(
    "octavia.create_monitor", CreateMonitor, MonitorView
)
UPDATE_MONITOR: Activity[UpdateMonitor, MonitorView] = Activity(
    "octavia.update_monitor", UpdateMonitor, MonitorView
)
DELETE: Activity[DeleteObject, bool] = Activity("octavia.delete", DeleteObject, bool)
