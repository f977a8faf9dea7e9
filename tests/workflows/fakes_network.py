"""An in-memory Neutron for time-skipping Network workflow tests, registered under the real activity names.

Objects are keyed by ID and found by exact name within their project, as the real activities do after their
post-filter. Projects exist only when added. `ports` holds foreign ports per network ID.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from temporalio import activity
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from osprov.activities import errors
from osprov.activities import vlan as vlan_activities
from osprov.api import network_io as io
from osprov.api import vlan_io
from osprov.api.cinder_io import ProjectScope
from osprov.workflows.all import WORKFLOWS
from tests.workflows.fakes import FakeCloud
from tests.workflows.harness import Harness

FINALIZER = "neutron.osh.openstack.org/finalizer"


@dataclass
class FakeNeutron:
    projects: set[tuple[str, str]] = field(default_factory=set)
    networks: dict[str, tuple[ProjectScope, io.NetworkView]] = field(default_factory=dict)
    subnets: dict[str, tuple[ProjectScope, io.SubnetView]] = field(default_factory=dict)
    routers: dict[str, tuple[ProjectScope, io.RouterView]] = field(default_factory=dict)
    ports: dict[str, int] = field(default_factory=dict)  # network ID -> foreign ports on it
    calls: list[str] = field(default_factory=list)
    fail_next: dict[str, str] = field(default_factory=dict)  # activity -> error type
    # This many creates are made but their answer is lost (the worker died after Neutron accepted it).
    lost_create_answers: int = 0
    # The operator's provider-network policy: the VLAN range of physnet1 offered to every namespace (None:
    # provider networks are refused).
    vlan_range: vlan_io.VlanRange | None = None
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def add_project(self, project: str = "p", domain: str = "Default") -> ProjectScope:
        self.projects.add((project, domain))
        return ProjectScope(project=project, domain=domain)

    def count(self, name: str) -> int:
        return sum(1 for c in self.calls if c == name)

    def _enter(self, name: str) -> None:
        self.calls.append(name)
        kind = self.fail_next.pop(name, None)
        if kind:
            raise errors.error(kind, f"injected {kind} for {name}")

    def _lost(self) -> None:
        if self.lost_create_answers > 0:
            self.lost_create_answers -= 1
            raise errors.transient("Neutron is unreachable (RemoteDisconnected)")

    def _id(self, prefix: str) -> str:
        return f"{prefix}-{next(self._ids)}"

    @staticmethod
    def _named(table: dict[str, tuple[ProjectScope, Any]], scope: ProjectScope, name: str) -> list[Any]:
        found = [v for s, v in table.values() if _same(s, scope) and v.name == name]
        return sorted(found, key=lambda v: v.id)

    def add_network(self, scope: ProjectScope, name: str, **fields: Any) -> io.NetworkView:
        net = io.NetworkView(id=self._id("net"), name=name, status="ACTIVE", **fields)
        self.networks[net.id] = (scope, net)
        return net

    def add_subnet(self, scope: ProjectScope, name: str, network_id: str, cidr: str) -> io.SubnetView:
        sub = io.SubnetView(id=self._id("sub"), name=name, network_id=network_id, cidr=cidr)
        self.subnets[sub.id] = (scope, sub)
        return sub

    def lookup(self, scope: ProjectScope, names: io.Names) -> io.NetworkLookup:
        nets = self._named(self.networks, scope, names.network)
        routers = self._named(self.routers, scope, names.router)
        return io.NetworkLookup(
            project_found=True,
            project_id=f"id-{scope.project}",
            networks=nets,
            subnets=self._named(self.subnets, scope, names.subnet),
            routers=routers,
            foreign_ports=self.ports.get(nets[0].id, 0) if len(nets) == 1 else 0,
        )

    def activities(self) -> list[Any]:
        n = self

        @activity.defn(name=io.FIND_NETWORK.name)
        async def find_network(req: io.FindNetwork) -> io.NetworkLookup:
            n._enter(io.FIND_NETWORK.name)
            if (req.scope.project, req.scope.domain) not in n.projects:
                return io.NetworkLookup(project_found=False)
            return n.lookup(req.scope, req.names)

        @activity.defn(name=io.CREATE_NETWORK.name)
        async def create_network(req: io.CreateNetwork) -> io.NetworkView:
            n._enter(io.CREATE_NETWORK.name)
            existing = n._named(n.networks, req.scope, req.name)
            if existing:
                return existing[0]  # type: ignore[no-any-return]
            seg = req.segment
            fields: dict[str, Any] = {}
            if seg is not None:
                fields = {
                    "network_type": "vlan",
                    "physical_network": seg.physical_network,
                    "segmentation_id": seg.segmentation_id,
                }
            made = n.add_network(req.scope, req.name, **fields)
            n._lost()
            return made

        @activity.defn(name=io.CREATE_SUBNET.name)
        async def create_subnet(req: io.CreateSubnet) -> io.SubnetView:
            n._enter(io.CREATE_SUBNET.name)
            existing = n._named(n.subnets, req.scope, req.name)
            if existing:
                return existing[0]  # type: ignore[no-any-return]
            made = n.add_subnet(req.scope, req.name, req.network_id, req.cidr)
            n._lost()
            return made

        @activity.defn(name=io.CREATE_ROUTER.name)
        async def create_router(req: io.CreateRouter) -> io.RouterView:
            n._enter(io.CREATE_ROUTER.name)
            existing = n._named(n.routers, req.scope, req.name)
            if existing:
                return existing[0]  # type: ignore[no-any-return]
            made = io.RouterView(id=n._id("rtr"), name=req.name, external_network_id=req.external_network_id)
            n.routers[made.id] = (req.scope, made)
            return made

        @activity.defn(name=io.ADD_ROUTER_INTERFACE.name)
        async def add_router_interface(req: io.RouterInterface) -> io.RouterView:
            n._enter(io.ADD_ROUTER_INTERFACE.name)
            scope, router = n.routers[req.router_id]
            subnets = sorted({*router.interface_subnets, req.subnet_id})
            router = router.model_copy(update={"interface_subnets": subnets})
            n.routers[router.id] = (scope, router)
            return router

        @activity.defn(name=io.REMOVE_ROUTER_INTERFACE.name)
        async def remove_router_interface(req: io.RouterInterface) -> bool:
            n._enter(io.REMOVE_ROUTER_INTERFACE.name)
            scope, router = n.routers[req.router_id]
            if req.subnet_id not in router.interface_subnets:
                return False
            left = [s for s in router.interface_subnets if s != req.subnet_id]
            n.routers[router.id] = (scope, router.model_copy(update={"interface_subnets": left}))
            return True

        @activity.defn(name=io.DELETE_OBJECT.name)
        async def delete_object(req: io.DeleteObject) -> io.DeleteResult:
            n._enter(io.DELETE_OBJECT.name)
            tables: dict[str, dict[str, Any]] = {
                "network": n.networks,
                "subnet": n.subnets,
                "router": n.routers,
            }
            table = tables[req.kind]
            if req.kind == "network" and n.ports.get(req.id):
                raise errors.conflict("Neutron refused to delete the network: it is still in use — retrying")
            return io.DeleteResult(outcome="deleted" if table.pop(req.id, None) else "absent")

        @activity.defn(name=vlan_io.PROVIDER_POLICY.name)
        async def provider_policy(req: vlan_io.ProviderRequest) -> vlan_io.ProviderPolicy:
            n._enter(vlan_io.PROVIDER_POLICY.name)
            if n.vlan_range is None or req.physical_network != "physnet1":
                return vlan_io.ProviderPolicy(allowed=False, message="not in the operator's mapping")
            return vlan_io.ProviderPolicy(allowed=True, range=n.vlan_range)

        @activity.defn(name=vlan_io.USED_IDS.name)
        async def used_ids(req: vlan_io.UsedIds) -> list[int]:
            n._enter(vlan_io.USED_IDS.name)
            nets = [net for _, net in n.networks.values() if net.physical_network == req.physical_network]
            return sorted({net.segmentation_id for net in nets if net.segmentation_id is not None})

        # The allocator's signals go through the real activities (the worker's Temporal client).
        return [
            provider_policy,
            used_ids,
            vlan_activities.request,
            vlan_activities.release,
            find_network,
            create_network,
            create_subnet,
            create_router,
            add_router_interface,
            remove_router_interface,
            delete_object,
        ]


def _same(a: ProjectScope, b: ProjectScope) -> bool:
    return (a.project, a.domain) == (b.project, b.domain)


class NetworkHarness(Harness):
    neutron: FakeNeutron

    def status(self) -> dict[str, Any]:
        return self.cloud.statuses[-1] if self.cloud.statuses else {}

    def condition(self) -> dict[str, Any]:
        return next((c for c in self.status().get("conditions", []) if c["type"] == "Available"), {})


async def network_harness(tenv: WorkflowEnvironment) -> AsyncIterator[NetworkHarness]:
    """A worker running the production workflows against FakeCloud (Kubernetes) and FakeNeutron."""
    cloud, neutron = FakeCloud(), FakeNeutron()
    queue = f"q-{uuid.uuid4()}"
    async with Worker(
        tenv.client,
        task_queue=queue,
        workflows=WORKFLOWS,
        activities=cloud.activities() + neutron.activities(),
    ):
        hs = NetworkHarness(tenv, cloud, queue)
        hs.neutron = neutron
        yield hs
        await hs.close()


SPEC: dict[str, Any] = {
    "project": {"name": "p", "domain": "Default"},
    "subnet": {"cidr": "10.1.0.0/24"},
    "router": {"externalNetworkID": "ext-1"},
    "deletionPolicy": "delete",
}


async def replay_scenario(h: Harness, kind: str) -> str:
    """tests/replay scenario for Network: create network, subnet, router and interface, a resync, delete."""
    neutron = FakeNeutron()
    neutron.add_project()
    queue = f"{h.queue}-neutron"
    activities = h.cloud.activities() + neutron.activities()
    async with Worker(h.env.client, task_queue=queue, workflows=WORKFLOWS, activities=activities):
        nh = NetworkHarness(h.env, h.cloud, queue)
        nh.neutron = neutron
        wf = await nh.apply(kind, SPEC, name="replay", uid="replay-network")
        await nh.until(lambda: nh.condition().get("reason") == "Provisioned", "network provisioned")
        finds = neutron.count(io.FIND_NETWORK.name)
        await h.env.sleep(601)
        await nh.until(lambda: neutron.count(io.FIND_NETWORK.name) > finds, "network resynced")
        await nh.signal(wf, 1, SPEC, deleting=True, finalizers=[FINALIZER])
        await wf.result()
        return wf.id


async def provider_scenario(h: Harness, kind: str) -> str:
    """tests/replay scenarios Network-provider and VlanAllocator: a provider Network gets its VLAN ID (P2),
    is made, resynced and deleted, and its ID released (P4). Returns the ID of the workflow `kind` names."""
    neutron = FakeNeutron(vlan_range=vlan_io.VlanRange(first=100, last=199))
    neutron.add_project()
    queue = f"{h.queue}-neutron"
    activities = h.cloud.activities() + neutron.activities()
    async with Worker(h.env.client, task_queue=queue, workflows=WORKFLOWS, activities=activities):
        nh = NetworkHarness(h.env, h.cloud, queue)
        nh.neutron = neutron
        spec = SPEC | {"provider": {"physicalNetwork": "physnet1"}}
        wf = await nh.apply("Network", spec, name="replay", uid="replay-network-provider")
        await nh.until(lambda: nh.condition().get("reason") == "Provisioned", "provider network provisioned")
        finds = neutron.count(io.FIND_NETWORK.name)
        await h.env.sleep(601)
        await nh.until(lambda: neutron.count(io.FIND_NETWORK.name) > finds, "network resynced")
        await nh.signal(wf, 1, spec, deleting=True, finalizers=[FINALIZER])
        await wf.result()
        allocator = h.env.client.get_workflow_handle(vlan_io.workflow_id("physnet1", queue))
        h.started.append(allocator)  # runs for good: terminated when the harness closes
        return allocator.id if kind == vlan_io.WORKFLOW_TYPE else wf.id
