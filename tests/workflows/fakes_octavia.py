"""Stub Octavia and Neutron (floating IP) activities for time-skipping LoadBalancer tests.

They register under the real activity names (api/octavia_io.py), so the workflow under test is the
production code. Octavia's locking is modelled: a mutation leaves the load balancer PENDING_* for
`settle_reads` reads, and a mutation while it is PENDING is a 409 Conflict, as in Octavia.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from temporalio import activity
from temporalio.worker import Worker

from osprov.activities import errors
from osprov.activities.octavia import settled
from osprov.api import octavia_io as io
from osprov.api.plan import UPDATE_PLAN, Plan
from osprov.workflows.loadbalancer import LoadBalancerWorkflow
from tests.workflows.harness import Harness, eventually

LB_FINALIZER = "octavia.osh.openstack.org/finalizer"
WORKFLOWS = [LoadBalancerWorkflow]


@dataclass
class FakeOctavia:
    lbs: dict[str, io.LoadBalancerView] = field(default_factory=dict)
    listeners: dict[str, io.ListenerView] = field(default_factory=dict)
    pools: dict[str, io.PoolView] = field(default_factory=dict)
    monitors: dict[str, io.MonitorView] = field(default_factory=dict)
    members: dict[str, list[io.MemberView]] = field(default_factory=dict)  # pool id -> members
    fips: dict[str, io.FloatingIpView] = field(default_factory=dict)
    calls: list[str] = field(default_factory=list)
    replaced: list[io.ReplaceMembers] = field(default_factory=list)  # every member batch, as sent
    reads: list[io.ReadTopology] = field(default_factory=list)  # every R0, as asked
    scopes: set[tuple[str, str]] = field(default_factory=set)  # every project scope a call used
    settle_reads: int = 1  # LB reads that still show PENDING_* after a mutation
    stuck_deletes: bool = False  # a cascade delete leaves the LB PENDING_DELETE until finish_deletes()
    vip_address: str = "10.20.0.5"
    foreign: set[str] = field(default_factory=set)  # load balancers of another project (never imported)
    # Someone else's change, made right after a member batch (before the workflow's next read): once.
    after_replace: Callable[[FakeOctavia, str], None] | None = None
    _pending: dict[str, int] = field(default_factory=dict)  # lb id -> PENDING reads left
    _pending_status: dict[str, str] = field(default_factory=dict)
    _forced: dict[str, str] = field(default_factory=dict)  # object id -> forced provisioning status
    _ids: itertools.count = field(default_factory=lambda: itertools.count(1))

    # ----- test controls ----------------------------------------------------------------------------
    def new_id(self, kind: str) -> str:
        # Octavia IDs are UUIDs; a "<kind>-<n>" ID could be a prefix of a resource's name ("lb-<uid>").
        return f"{kind}-id-{next(self._ids):06d}"

    def force(self, obj_id: str, status: str) -> None:
        """Pin an object's provisioning status (ERROR, PENDING_UPDATE …) as the database fault does."""
        self._forced[obj_id] = status

    def unpin(self, obj_id: str) -> None:
        """Let a pinned status go (the fault is over)."""
        self._forced.pop(obj_id, None)

    def count(self, name: str) -> int:
        return sum(1 for c in self.calls if c == name)

    def mutations(self) -> list[str]:
        verbs = ("create", "update", "replace", "delete")
        return [c for c in self.calls if c.split(".")[1].startswith(verbs)]

    def finish_deletes(self) -> None:
        """Octavia finally finishes the cascade deletes it accepted while stuck_deletes was set."""
        self.stuck_deletes = False
        for lb_id in [i for i, st in self._forced.items() if st == "PENDING_DELETE" and i in self.lbs]:
            self._cascade(lb_id)

    def lb(self) -> io.LoadBalancerView:
        [lb] = self.lbs.values()
        return lb

    def named(self, objs: dict[str, Any], name: str) -> Any:
        [obj] = [o for o in objs.values() if o.name == name]
        return obj

    def add_lb(self, name: str, status: str = io.ACTIVE) -> io.LoadBalancerView:
        lb = io.LoadBalancerView(
            id=self.new_id("lb"),
            name=name,
            provisioning_status=status,
            vip_address=self.vip_address,
            vip_port_id=self.new_id("port"),
        )
        self.lbs[lb.id] = lb
        return lb

    # ----- model ------------------------------------------------------------------------------------
    def _status(self, obj_id: str, stored: str) -> str:
        return self._forced.get(obj_id, stored)

    def _read_lb(self, lb: io.LoadBalancerView) -> io.LoadBalancerView:
        left = self._pending.get(lb.id, 0)
        if left > 0:
            self._pending[lb.id] = left - 1
            status = self._pending_status[lb.id]
        else:
            status = io.ACTIVE
        return lb.model_copy(update={"provisioning_status": self._status(lb.id, status)})

    def _lock(self, lb_id: str, status: str = "PENDING_UPDATE") -> None:
        """A mutation: refused (409) while the load balancer is not ACTIVE, then PENDING for a while."""
        if self._pending.get(lb_id, 0) > 0 or self._status(lb_id, io.ACTIVE) != io.ACTIVE:
            raise errors.conflict(f"load balancer {lb_id} is immutable while not ACTIVE")
        self._pending[lb_id] = self.settle_reads
        self._pending_status[lb_id] = status

    def _lb_of_pool(self, pool_id: str) -> str:
        return self._pool_lb[pool_id]

    def __post_init__(self) -> None:
        self._pool_lb: dict[str, str] = {}
        self._listener_lb: dict[str, str] = {}

    def _cascade(self, lb_id: str) -> None:
        """Cascade delete: the load balancer goes with its whole tree (PENDING_DELETE modelled as instant)."""
        pools = [p for p, owner in self._pool_lb.items() if owner == lb_id]
        for pool_id in pools:
            self.pools.pop(pool_id, None)
            self.members.pop(pool_id, None)
        for mid in [m.id for m in self.monitors.values() if m.pool_id in pools]:
            del self.monitors[mid]
        for lid in [x for x, owner in self._listener_lb.items() if owner == lb_id]:
            self.listeners.pop(lid, None)
        self._forced.pop(lb_id, None)
        del self.lbs[lb_id]

    def _record(self, name: str, scope: io.Scope) -> None:
        self.calls.append(name)
        self.scopes.add((scope.project, scope.domain))

    # ----- activities -------------------------------------------------------------------------------
    def activities(self) -> list[Any]:
        o = self

        @activity.defn(name=io.FIND_LOAD_BALANCER.name)
        async def find_load_balancer(req: io.FindLoadBalancer) -> list[io.LoadBalancerView]:
            o._record(io.FIND_LOAD_BALANCER.name, req.scope)
            return [
                o._read_lb(lb) for lb in sorted(o.lbs.values(), key=lambda v: v.id) if lb.name == req.name
            ]

        @activity.defn(name=io.AWAIT_LOAD_BALANCER.name)
        async def await_load_balancer(req: io.AwaitLoadBalancer) -> list[io.LoadBalancerView]:
            """The real activity's loop without its clock: as many reads as fit in `within_seconds`."""
            o._record(io.AWAIT_LOAD_BALANCER.name, req.scope)
            found: list[io.LoadBalancerView] = []
            for _ in range(max(1, int(req.within_seconds / req.interval_seconds))):
                found = [o._read_lb(o.lbs[req.id])] if req.id in o.lbs else []
                if settled(found, req.gone):
                    break
            return found

        @activity.defn(name=io.AWAIT_TOPOLOGY.name)
        async def await_topology(req: io.AwaitTopology) -> io.AwaitedTopology:
            """The real activity's composition (each part still recorded by its own name)."""
            last = await await_load_balancer(req.wait)
            if not settled(last, req.wait.gone):
                return io.AwaitedTopology()
            pools = req.members_of
            if (
                pools is not None
                and last
                and last[0].provisioning_status == io.ACTIVE
                and set(pools) <= set(o.pools)
            ):
                # R0m: the changed pools' members (a pool gone: R0 instead)
                refs = [io.PoolRef(scope=req.read.scope, pool_id=p) for p in pools]
                members = {ref.pool_id: await list_members(ref) for ref in refs}
                return io.AwaitedTopology(topology=io.Topology(found=last, members=members))
            return io.AwaitedTopology(topology=await read_topology(req.read))

        @activity.defn(name=io.FIND_IMPORTED_LOAD_BALANCER.name)
        async def find_imported_load_balancer(req: io.FindImportedLoadBalancer) -> list[io.LoadBalancerView]:
            o._record(io.FIND_IMPORTED_LOAD_BALANCER.name, req.scope)
            ours = (lb for lb in sorted(o.lbs.values(), key=lambda v: v.id) if lb.id not in o.foreign)
            return [o._read_lb(lb) for lb in ours if req.id in (None, lb.id) and req.name in (None, lb.name)]

        @activity.defn(name=io.CREATE_LOAD_BALANCER.name)
        async def create_load_balancer(req: io.CreateLoadBalancer) -> io.LoadBalancerView:
            o._record(io.CREATE_LOAD_BALANCER.name, req.scope)
            existing = [lb for lb in o.lbs.values() if lb.name == req.name]
            if existing:
                return existing[0]
            lb = io.LoadBalancerView(
                id=o.new_id("lb"),
                name=req.name,
                provisioning_status="PENDING_CREATE",
                vip_address=req.vip_address or o.vip_address,
                vip_port_id=o.new_id("port"),
            )
            o.lbs[lb.id] = lb
            o._pending[lb.id] = o.settle_reads
            o._pending_status[lb.id] = "PENDING_CREATE"
            return lb

        def children(objs: dict[str, Any], owner: dict[str, str], req: io.ListChildren) -> list[Any]:
            return [
                x.model_copy(update={"provisioning_status": o._status(x.id, x.provisioning_status)})
                for x in sorted(objs.values(), key=lambda v: v.id)
                if owner.get(x.id) == req.load_balancer_id and x.name.startswith(req.prefix)
            ]

        @activity.defn(name=io.LIST_LISTENERS.name)
        async def list_listeners(req: io.ListChildren) -> list[io.ListenerView]:
            o._record(io.LIST_LISTENERS.name, req.scope)
            return children(o.listeners, o._listener_lb, req)

        @activity.defn(name=io.CREATE_LISTENER.name)
        async def create_listener(req: io.CreateListener) -> io.ListenerView:
            o._record(io.CREATE_LISTENER.name, req.scope)
            o._lock(req.load_balancer_id)
            if any(x.port == req.port and x.protocol == req.protocol for x in o.listeners.values()):
                raise errors.conflict(f"another listener uses {req.protocol}/{req.port}")
            x = io.ListenerView(
                id=o.new_id("listener"),
                name=req.name,
                provisioning_status=io.ACTIVE,
                protocol=req.protocol,
                port=req.port,
                allowed_cidrs=sorted(req.allowed_cidrs),
                default_pool_id=req.default_pool_id,
                timeout_client_data=req.timeout_client_data or 50000,
                timeout_member_data=req.timeout_member_data or 50000,
            )
            o.listeners[x.id] = x
            o._listener_lb[x.id] = req.load_balancer_id
            return x

        @activity.defn(name=io.UPDATE_LISTENER.name)
        async def update_listener(req: io.UpdateListener) -> io.ListenerView:
            o._record(io.UPDATE_LISTENER.name, req.scope)
            o._lock(o._listener_lb[req.id])
            fields = req.model_dump(exclude_none=True, exclude={"scope", "id"})
            o.listeners[req.id] = o.listeners[req.id].model_copy(update=fields)
            return o.listeners[req.id]

        @activity.defn(name=io.LIST_POOLS.name)
        async def list_pools(req: io.ListChildren) -> list[io.PoolView]:
            o._record(io.LIST_POOLS.name, req.scope)
            return children(o.pools, o._pool_lb, req)

        @activity.defn(name=io.CREATE_POOL.name)
        async def create_pool(req: io.CreatePool) -> io.PoolView:
            o._record(io.CREATE_POOL.name, req.scope)
            o._lock(req.load_balancer_id)
            p = io.PoolView(
                id=o.new_id("pool"),
                name=req.name,
                provisioning_status=io.ACTIVE,
                protocol=req.protocol,
                lb_algorithm=req.lb_algorithm,
            )
            o.pools[p.id] = p
            o._pool_lb[p.id] = req.load_balancer_id
            o.members[p.id] = []
            return p

        @activity.defn(name=io.UPDATE_POOL.name)
        async def update_pool(req: io.UpdatePool) -> io.PoolView:
            o._record(io.UPDATE_POOL.name, req.scope)
            o._lock(o._pool_lb[req.id])
            o.pools[req.id] = o.pools[req.id].model_copy(update={"lb_algorithm": req.lb_algorithm})
            return o.pools[req.id]

        @activity.defn(name=io.LIST_MEMBERS.name)
        async def list_members(req: io.PoolRef) -> list[io.MemberView]:
            o._record(io.LIST_MEMBERS.name, req.scope)
            return sorted(o.members.get(req.pool_id, []), key=lambda m: (m.address, m.port))

        @activity.defn(name=io.REPLACE_MEMBERS.name)
        async def replace_members(req: io.ReplaceMembers) -> None:
            o._record(io.REPLACE_MEMBERS.name, req.scope)
            if req.pool_id not in o.pools:
                raise errors.not_found(f"replace members of pool {req.pool_id}: not found in Octavia")
            o.replaced.append(req)
            o._lock(o._pool_lb[req.pool_id])
            o.members[req.pool_id] = [
                io.MemberView(
                    id=o.new_id("member"), address=m.address, port=m.port, provisioning_status=io.ACTIVE
                )
                for m in req.members
            ]
            if o.after_replace is not None:
                meddle, o.after_replace = o.after_replace, None
                meddle(o, req.pool_id)

        @activity.defn(name=io.LIST_MONITORS.name)
        async def list_monitors(req: io.ListChildren) -> list[io.MonitorView]:
            o._record(io.LIST_MONITORS.name, req.scope)
            return [
                m.model_copy(update={"provisioning_status": o._status(m.id, m.provisioning_status)})
                for m in sorted(o.monitors.values(), key=lambda v: v.id)
                if m.name.startswith(req.prefix)
            ]

        @activity.defn(name=io.CREATE_MONITOR.name)
        async def create_monitor(req: io.CreateMonitor) -> io.MonitorView:
            o._record(io.CREATE_MONITOR.name, req.scope)
            o._lock(o._pool_lb[req.pool_id])
            m = io.MonitorView(
                id=o.new_id("monitor"),
                name=req.name,
                provisioning_status=io.ACTIVE,
                type=req.type,
                pool_id=req.pool_id,
                delay=req.delay,
                timeout=req.timeout,
                max_retries=req.max_retries,
                max_retries_down=req.max_retries_down,
            )
            o.monitors[m.id] = m
            return m

        @activity.defn(name=io.UPDATE_MONITOR.name)
        async def update_monitor(req: io.UpdateMonitor) -> io.MonitorView:
            o._record(io.UPDATE_MONITOR.name, req.scope)
            old = o.monitors[req.id]
            o._lock(o._pool_lb[old.pool_id or ""])
            o.monitors[req.id] = old.model_copy(update=req.model_dump(exclude={"scope", "id"}))
            return o.monitors[req.id]

        @activity.defn(name=io.DELETE.name)
        async def delete(req: io.DeleteObject) -> bool:
            o._record(io.DELETE.name, req.scope)
            if req.kind == "loadbalancer":
                if req.id not in o.lbs:
                    return False
                if o._pending.get(req.id, 0) > 0 or o._status(req.id, io.ACTIVE) in io.PENDING:
                    raise errors.conflict(f"load balancer {req.id} is immutable while PENDING")
                if not req.cascade and any(v == req.id for v in o._listener_lb.values()):
                    raise errors.conflict("load balancer has listeners: cascade needed")
                if o.stuck_deletes:
                    o._forced[req.id] = "PENDING_DELETE"
                else:
                    o._cascade(req.id)
                return True
            tables: dict[str, dict[str, Any]] = {
                "listener": o.listeners,
                "pool": o.pools,
                "healthmonitor": o.monitors,
            }
            table = tables[req.kind]
            if req.id not in table:
                return False
            owner = {"listener": o._listener_lb, "pool": o._pool_lb}.get(req.kind)
            lb_id = owner[req.id] if owner else o._pool_lb[table[req.id].pool_id]
            o._lock(lb_id)
            del table[req.id]
            if req.kind == "pool":  # Octavia deletes a pool's members and monitor with it
                o.members.pop(req.id, None)
                for mid in [m.id for m in o.monitors.values() if m.pool_id == req.id]:
                    del o.monitors[mid]
            return True

        @activity.defn(name=io.FIND_FLOATING_IPS.name)
        async def find_floating_ips(req: io.FindFloatingIps) -> list[io.FloatingIpView]:
            o._record(io.FIND_FLOATING_IPS.name, req.scope)
            return sorted((f for f in o.fips.values() if f.port_id == req.port_id), key=lambda f: f.id)

        @activity.defn(name=io.CREATE_FLOATING_IP.name)
        async def create_floating_ip(req: io.CreateFloatingIp) -> io.FloatingIpView:
            o._record(io.CREATE_FLOATING_IP.name, req.scope)
            existing = [f for f in o.fips.values() if f.port_id == req.port_id]
            if existing:
                return existing[0]
            f = io.FloatingIpView(
                id=o.new_id("fip"), address=f"172.24.4.{len(o.fips) + 10}", port_id=req.port_id
            )
            o.fips[f.id] = f
            return f

        @activity.defn(name=io.DELETE_FLOATING_IP.name)
        async def delete_floating_ip(req: io.DeleteFloatingIp) -> bool:
            o._record(io.DELETE_FLOATING_IP.name, req.scope)
            return o.fips.pop(req.id, None) is not None

        @activity.defn(name=io.READ_TOPOLOGY.name)
        async def read_topology(req: io.ReadTopology) -> io.Topology:
            """The real activity's composition of the reads (each still recorded by its own name)."""
            o.calls.append(io.READ_TOPOLOGY.name)
            o.reads.append(req)
            found = await find_load_balancer(io.FindLoadBalancer(scope=req.scope, name=req.name))
            if len(found) != 1 or found[0].provisioning_status != io.ACTIVE or not found[0].vip_port_id:
                return io.Topology(found=found)
            lb = found[0]
            assert lb.vip_port_id is not None
            c = io.ListChildren(scope=req.scope, load_balancer_id=lb.id, prefix=req.prefix)
            pools = await list_pools(c)
            ours = [p for p in pools if p.name in req.pools]
            return io.Topology(
                found=found,
                listeners=await list_listeners(c),
                pools=pools,
                monitors=await list_monitors(c),
                floating_ips=await find_floating_ips(
                    io.FindFloatingIps(scope=req.scope, port_id=lb.vip_port_id)
                ),
                members={p.id: await list_members(io.PoolRef(scope=req.scope, pool_id=p.id)) for p in ours},
            )

        return [
            read_topology,
            await_load_balancer,
            await_topology,
            find_load_balancer,
            find_imported_load_balancer,
            create_load_balancer,
            list_listeners,
            create_listener,
            update_listener,
            list_pools,
            create_pool,
            update_pool,
            list_members,
            replace_members,
            list_monitors,
            create_monitor,
            update_monitor,
            delete,
            find_floating_ips,
            create_floating_ip,
            delete_floating_ip,
        ]


async def replay_scenario(h: Harness, kind: str, plan: bool = False) -> str:
    """tests/replay scenario for LoadBalancer: create (PENDING waits), a member change (`plan`: planned
    first, through the Update `plan`), then delete.

    The shared harness has no Octavia, so this runs its own worker (FakeCloud + FakeOctavia) beside it."""
    octavia = FakeOctavia()
    queue = f"{h.queue}-octavia"
    async with Worker(
        h.env.client,
        task_queue=queue,
        workflows=WORKFLOWS,
        activities=h.cloud.activities() + octavia.activities(),
    ):
        lh = Harness(h.env, h.cloud, queue)
        listener = {
            "name": "http",
            "protocol": "TCP",
            "port": 80,
            "pool": {"members": [{"address": "10.0.0.11", "port": 8080}]},
            "healthCheck": {
                "delaySeconds": 5,
                "timeoutSeconds": 3,
                "healthyThreshold": 2,
                "unhealthyThreshold": 3,
            },
        }
        spec: dict[str, Any] = {
            "project": {"name": "p", "domain": "Default"},
            "vipNetworkID": "net",
            "publicIP": True,
            "deletionPolicy": "delete",
            "listeners": [listener],
        }
        wf = await lh.apply(kind, spec, name="replay", uid="replay-loadbalancer", finalizers=[LB_FINALIZER])

        async def reached(generation: int) -> bool:
            st = h.cloud.statuses[-1] if h.cloud.statuses else {}
            done = (
                st.get("observedGeneration") == generation and st["conditions"][0]["reason"] == "Provisioned"
            )
            if not done:
                await h.env.sleep(0.5)  # time-skipping: the next requeue timer fires at once
            return done

        await eventually(lambda: reached(1), "load balancer provisioned", 30)
        changed = copy.deepcopy(spec)
        changed["listeners"][0]["pool"]["members"] = [{"address": "10.0.0.12", "port": 8080}]
        if plan:
            await wf.execute_update(UPDATE_PLAN, changed, result_type=Plan)
        await lh.signal(wf, 2, changed, finalizers=[LB_FINALIZER])
        await eventually(lambda: reached(2), "member change converged", 30)
        octavia.stuck_deletes = True  # Octavia takes a while: the delete re-checks (D4) a few times
        await lh.signal(wf, 2, changed, deleting=True, finalizers=[LB_FINALIZER])
        deletes = octavia.count(io.FIND_LOAD_BALANCER.name)
        await h.until(lambda: octavia.count(io.FIND_LOAD_BALANCER.name) >= deletes + 3, "delete re-checked")
        octavia.finish_deletes()
        await wf.result()
        return wf.id


async def observe_scenario(h: Harness, kind: str) -> str:
    """tests/replay scenario for an unmanaged LoadBalancer (O1, OL3, OL1): an imported load balancer seen
    PENDING, then ACTIVE, a resync, the resource deleted (the load balancer stays)."""
    octavia = FakeOctavia()
    theirs = octavia.add_lb("legacy", status="ACTIVE")
    octavia.force(theirs.id, "PENDING_UPDATE")
    queue = f"{h.queue}-octavia"
    activities = h.cloud.activities() + octavia.activities()
    async with Worker(h.env.client, task_queue=queue, workflows=WORKFLOWS, activities=activities):
        lh = Harness(h.env, h.cloud, queue)
        spec: dict[str, Any] = {
            "project": {"name": "p", "domain": "Default"},
            "vipNetworkID": "net",
            "managementPolicy": "unmanaged",
            "import": {"id": theirs.id},
        }
        wf = await lh.apply(kind, spec, name="observed", uid="replay-loadbalancer-observe")
        await h.until(lambda: octavia.count(io.FIND_IMPORTED_LOAD_BALANCER.name) >= 1, "load balancer read")
        octavia._forced.pop(theirs.id)
        await h.until(lambda: lh.last_ready().get("reason") == "Provisioned", "load balancer observed")
        reads = octavia.count(io.FIND_IMPORTED_LOAD_BALANCER.name)
        await h.until(lambda: octavia.count(io.FIND_IMPORTED_LOAD_BALANCER.name) > reads, "resynced", 3600)
        await lh.signal(wf, 1, spec, deleting=True)
        await wf.result()
        return wf.id
