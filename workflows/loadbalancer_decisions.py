"""The LoadBalancer passes as pure decision tables (octavia.md; step labels in docs/loadbalancer.md).

No I/O and no Temporal: workflows/loadbalancer.py starts a pass with an empty `Observation`, asks
`converge` (P1…P8) or `delete` (D1…D4) for the next step, executes exactly that, folds what it read or
made into the observation and asks again. Reads (P1/D1 find, R1, R2, D2) and Neutron floating-IP calls
(P5, D2) do not lock the load balancer, so the pass goes on after them; it ends at the first Octavia
mutation (every one leaves the load balancer PENDING_UPDATE), a wait, an error or Done.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TypeVar

from osprov.api import octavia_io as io
from osprov.api.octavia import Listener, LoadBalancerSpec
from osprov.workflows.loadbalancer_rules import idle_timeout_ms, listener_drift, monitor_type, pool_protocol

T = TypeVar("T")


# --- what the pass has read ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Tree:
    """R1: the load balancer's own children (lb-{uid}-*) and the floating IPs on its VIP port."""

    listeners: tuple[io.ListenerView, ...] = ()
    pools: tuple[io.PoolView, ...] = ()
    monitors: tuple[io.MonitorView, ...] = ()
    floating_ips: tuple[io.FloatingIpView, ...] = ()


@dataclass(frozen=True)
class Observation:
    found: tuple[io.LoadBalancerView, ...] | None = None  # exact-name matches of lb-{uid} (P1, D1)
    tree: Tree | None = None  # R1 (the delete pass reads only its floating IPs: D2)
    members: Mapping[str, tuple[io.MemberView, ...]] | None = None  # R2: pool ID -> members

    def without_floating_ip(self, fip_id: str) -> Observation:
        tree = self.tree or Tree()
        kept = tuple(f for f in tree.floating_ips if f.id != fip_id)
        return replace(self, tree=replace(tree, floating_ips=kept))

    def with_floating_ip(self, fip: io.FloatingIpView) -> Observation:
        return replace(self, tree=replace(self.tree or Tree(), floating_ips=(fip,)))


# --- what to do next ----------------------------------------------------------------------------------
def fold_topology(obs: Observation, t: io.Topology) -> Observation:
    """R0's answer as P1's, R1's and R2's would have been (the parts it did not read stay unread)."""
    obs = replace(obs, found=tuple(t.found))
    if t.listeners is None or t.pools is None or t.monitors is None or t.floating_ips is None:
        return obs
    tree = Tree(tuple(t.listeners), tuple(t.pools), tuple(t.monitors), tuple(t.floating_ips))
    members = None if t.members is None else {k: tuple(v) for k, v in t.members.items()}
    return replace(obs, tree=tree, members=members)


def members_end_the_pass(
    spec: LoadBalancerSpec, uid: str, obs: Observation, batch: io.ReplaceMembers, *, namespace: str = ""
) -> bool:
    """R0m: whether `batch`, decided from `obs`, is the pass's last step: with its members in place, the
    decisions on the rest of what this pass read say Done. Its wait then reads only that pool's members."""
    if obs.members is None or obs.tree is None:
        return False
    placed = tuple(
        io.MemberView(id="", address=m.address, port=m.port, provisioning_status=io.ACTIVE)
        for m in batch.members
    )
    predicted = replace(obs, members={**obs.members, batch.pool_id: placed})
    decided = converge(spec, uid, predicted, batch.scope, at_once=True, namespace=namespace)
    return isinstance(decided.action, Done)


def fold_members(obs: Observation, t: io.Topology) -> Observation:
    """R0m's answer folded into the pass's R0: the wait's read of the load balancer, the changed pools'
    members; the rest is what R0 read before the step."""
    read = {pool_id: tuple(members) for pool_id, members in (t.members or {}).items()}
    return replace(obs, found=tuple(t.found), members={**(obs.members or {}), **read})


@dataclass(frozen=True)
class ReadTree:
    """R1: list the children and the VIP port's floating IPs (four reads in parallel)."""

    children: io.ListChildren
    floating_ips: io.FindFloatingIps


@dataclass(frozen=True)
class ReadMembers:
    """R2: list the members of these pools (the spec's own)."""

    scope: io.Scope
    pools: tuple[io.PoolView, ...]


@dataclass(frozen=True)
class Wait:
    """Octavia holds an object PENDING_*: re-read later (backing off)."""


@dataclass(frozen=True)
class Fail:
    """A consistency error: no safe next action (Errored; retried read-only until the cloud changes)."""

    message: str


@dataclass(frozen=True)
class Done:
    """Converged (the Provisioned condition's message), or deleted."""

    message: str = ""


Read = io.ReadTopology | io.FindLoadBalancer | ReadTree | ReadMembers | io.FindFloatingIps
# Neutron does not lock the load balancer: the pass goes on with the result folded in.
FloatingIpCall = io.CreateFloatingIp | io.DeleteFloatingIp
# One Octavia mutation: the pass ends; the next one re-reads once Octavia settled (ACTIVE).
Mutation = (
    io.CreateLoadBalancer
    | io.CreatePool
    | io.UpdatePool
    | io.CreateListener
    | io.UpdateListener
    | io.ReplaceMembers
    | io.CreateMonitor
    | io.UpdateMonitor
    | io.DeleteObject
)
Action = Read | FloatingIpCall | Mutation | Wait | Fail | Done


@dataclass(frozen=True)
class PublicIp:
    """The floating IP address P5 settled on (None: no floating IP)."""

    address: str | None


@dataclass(frozen=True)
class Decision:
    rule: str  # step label (docs/loadbalancer.md), e.g. "P7b"
    action: Action
    what: str  # a sentence: the step (query, Web UI details) and the call's summary
    public_ip: PublicIp | None = None  # set once the pass got past P5 (the status records it)

    @property
    def step(self) -> str:
        return f"{self.rule}: {self.what}"


def scope_of(spec: LoadBalancerSpec) -> io.Scope:
    """The controller-scoped project of a spec.project resource (the workflow passes the scope the tenancy
    step decided, which for an Identity carries its credential)."""
    assert spec.project is not None
    return io.Scope(project=spec.project.name, domain=spec.project.domain)


def _one(found: tuple[T, ...] | list[T], what: str) -> T | Fail | None:
    """Octavia's name filter is fuzzy and names are not unique: more than one exact match is an error."""
    if len(found) > 1:
        return Fail(f"{len(found)} Octavia objects are named exactly {what}; remove the extra ones")
    return found[0] if found else None


def _classify(status: str, what: str) -> Wait | Fail | None:
    """Provisioning status: ACTIVE → None (go on), PENDING_* → Wait, anything else → Fail."""
    if status == io.ACTIVE:
        return None
    if status in io.PENDING:
        return Wait()
    return Fail(
        f"Octavia reports {what} in provisioning status {status}; there is no safe next action: "
        "an operator must repair or delete it"
    )


# --- create / converge (P1…P8) ------------------------------------------------------------------------
@dataclass(frozen=True)
class _Pass:
    """The facts every step after P4 shares."""

    spec: LoadBalancerSpec
    uid: str
    lb: io.LoadBalancerView
    tree: Tree
    members: Mapping[str, tuple[io.MemberView, ...]] | None
    scope: io.Scope

    def wanted(self, name: type[io.PoolView] | type[io.ListenerView]) -> set[str]:
        make = io.pool_name if name is io.PoolView else io.listener_name
        return {make(self.uid, ls.name) for ls in self.spec.listeners}

    def public_address(self) -> str | None:
        fips = self.tree.floating_ips
        return fips[0].address if fips and self.spec.public_ip else None


def converge(
    spec: LoadBalancerSpec,
    uid: str,
    obs: Observation,
    scope: io.Scope | None = None,
    *,
    at_once: bool = False,
    namespace: str = "",
) -> Decision:
    """The next step of the create/converge pass, checked in octavia.md's order. `scope`: where every call
    goes (unset: the spec's project, controller-scoped). `at_once`: the pass's first read is R0, which
    reads what P1, R1 and R2 would in one call (what it could not read, they still ask for). `namespace`:
    the resource's, where a spec.vipNetwork resource lives."""
    scope = scope or scope_of(spec)
    if at_once and obs.found is None:
        name = io.lb_name(uid)
        pools = tuple(sorted(io.pool_name(uid, ls.name) for ls in spec.listeners))
        topology = io.ReadTopology(scope=scope, name=name, prefix=f"{name}-", pools=pools)
        return Decision(
            "R0", topology, f"read load balancer {name} with its listeners, pools, monitors and members"
        )
    lb = _load_balancer(spec, uid, obs, scope, namespace)
    if isinstance(lb, Decision):
        return lb
    if obs.tree is None:
        assert lb.vip_port_id is not None  # P4
        read = ReadTree(
            children=io.ListChildren(scope=scope, load_balancer_id=lb.id, prefix=f"{lb.name}-"),
            floating_ips=io.FindFloatingIps(scope=scope, port_id=lb.vip_port_id),
        )
        return Decision("R1", read, "read the listeners, pools, health monitors and floating IPs")
    p = _Pass(spec, uid, lb, obs.tree, obs.members, scope)
    for step in (_children_settled, _read_members, _members_settled, _floating_ip):
        if (d := step(p)) is not None:
            return d
    recorded = PublicIp(p.public_address())
    for step in (_prune_listener, _listeners, _prune_monitor_or_pool):
        if (d := step(p)) is not None:
            return replace(d, public_ip=recorded)
    public = f", public IP {recorded.address}" if recorded.address else ""
    message = (
        f"load balancer {lb.name} is ACTIVE with {len(spec.listeners)} listener(s), "
        f"VIP {lb.vip_address}{public}"
    )
    return Decision("P8", Done(message), "converged: every object is ACTIVE", public_ip=recorded)


def _load_balancer(
    spec: LoadBalancerSpec, uid: str, obs: Observation, scope: io.Scope, namespace: str
) -> io.LoadBalancerView | Decision:
    """P1–P4: find or create lb-{uid}; its VIP; its provisioning status."""
    name = io.lb_name(uid)
    if obs.found is None:
        find = io.FindLoadBalancer(scope=scope, name=name)
        return Decision("P1", find, f"find load balancer {name}")
    lb = _one(obs.found, name)
    if isinstance(lb, Fail):
        return Decision("P1", lb, f"more than one load balancer is named {name}")
    if lb is None:
        create = io.CreateLoadBalancer(
            scope=scope,
            name=name,
            vip_network_id=spec.vip_network_id,
            vip_network=spec.vip_network,
            namespace=namespace,
            vip_subnet_id=spec.vip_subnet_id,
            vip_address=spec.vip_address,
        )
        vip = spec.vip_network_id or f"of Network {spec.vip_network}"
        return Decision("P1", create, f"create load balancer {name} on VIP network {vip}")
    if spec.vip_address and (
        not lb.vip_address or ipaddress.ip_address(spec.vip_address) != ipaddress.ip_address(lb.vip_address)
    ):
        message = (
            f"the load balancer's VIP is {lb.vip_address or 'unset'}, not the requested {spec.vip_address}; "
            "the VIP cannot change: delete and recreate the resource to move it"
        )
        return Decision("P2", Fail(message), "the VIP is not the requested address")
    if (verdict := _classify(lb.provisioning_status, f"load balancer {name}")) is not None:
        return Decision(
            "P3", verdict, f"load balancer {name} is {lb.provisioning_status}; waiting for ACTIVE"
        )
    if not lb.vip_address or not lb.vip_port_id:
        message = f"load balancer {name} is ACTIVE but has no VIP address or VIP port"
        return Decision("P4", Fail(message), "the VIP is not realised")
    return lb


def _children_settled(p: _Pass) -> Decision | None:
    """P3b: a child PENDING_* is waited out; one in ERROR stops the pass before any mutation."""
    owned: list[io.ListenerView | io.PoolView | io.MonitorView] = [
        *p.tree.listeners,
        *p.tree.pools,
        *p.tree.monitors,
    ]
    for obj in owned:
        if (verdict := _classify(obj.provisioning_status, obj.name)) is not None:
            return Decision("P3b", verdict, f"{obj.name} is {obj.provisioning_status}; waiting for ACTIVE")
    return None


def _read_members(p: _Pass) -> Decision | None:
    """R2: the members of the spec's pools (an orphan pool's members do not matter)."""
    if p.members is not None:
        return None
    ours = tuple(pool for pool in p.tree.pools if pool.name in p.wanted(io.PoolView))
    return Decision("R2", ReadMembers(p.scope, ours), "read the members of the pools")


def _members_settled(p: _Pass) -> Decision | None:
    """P3b for members: the same classification."""
    for pool in p.tree.pools:
        for m in (p.members or {}).get(pool.id, ()):
            if (verdict := _classify(m.provisioning_status, f"member {m.address}:{m.port}")) is not None:
                what = f"member {m.address}:{m.port} of {pool.name} is {m.provisioning_status}; waiting"
                return Decision("P3b", verdict, what)
    return None


def _floating_ip(p: _Pass) -> Decision | None:
    """P5: the floating IP on the VIP port, as spec.publicIP wants it."""
    fips = p.tree.floating_ips
    if len(fips) > 1:
        message = f"{len(fips)} floating IPs are on the VIP port of {p.lb.name}; remove the extra ones"
        return Decision("P5", Fail(message), "more than one floating IP is on the VIP port")
    if fips and not p.spec.public_ip:
        delete_fip = io.DeleteFloatingIp(scope=p.scope, id=fips[0].id)
        return Decision("P5", delete_fip, f"delete floating IP {fips[0].address} (publicIP is off)")
    if not fips and p.spec.public_ip:
        assert p.lb.vip_port_id is not None  # P4
        create = io.CreateFloatingIp(scope=p.scope, port_id=p.lb.vip_port_id)
        return Decision("P5", create, f"create a floating IP on VIP port {p.lb.vip_port_id}")
    return None


def _prune_listener(p: _Pass) -> Decision | None:
    """P6: one orphan listener first, so that a renamed listener finds its port free."""
    wanted = p.wanted(io.ListenerView)
    orphan = next(
        (x for x in p.tree.listeners if x.name.endswith("-listener") and x.name not in wanted), None
    )
    if orphan is None:
        return None
    prune = io.DeleteObject(scope=p.scope, kind="listener", id=orphan.id)
    return Decision("P6", prune, f"delete listener {orphan.name} (no longer in the spec)")


def _listeners(p: _Pass) -> Decision | None:
    """P7, per listener in spec order: its pool, the listener, the members, the health monitor."""
    for listener in p.spec.listeners:
        pool = _pool(p, listener)
        if isinstance(pool, Decision):
            return pool
        for step in (_listener, _members, _monitor):
            if (d := step(p, listener, pool)) is not None:
                return d
    return None


def _pool(p: _Pass, listener: Listener) -> io.PoolView | Decision:
    """P7a: find or create; its protocol cannot change in place; fix lb-method drift."""
    name, protocol = io.pool_name(p.uid, listener.name), pool_protocol(listener)
    pool = _one([x for x in p.tree.pools if x.name == name], name)
    if isinstance(pool, Fail):
        return Decision("P7a", pool, f"more than one pool is named {name}")
    if pool is None:
        create = io.CreatePool(scope=p.scope, load_balancer_id=p.lb.id, name=name, protocol=protocol)
        return Decision("P7a", create, f"create pool {name} ({protocol})")
    if pool.protocol != protocol:
        message = (
            f"pool {name} has protocol {pool.protocol}, not {protocol}; Octavia cannot "
            "change it in place: give the listener a new name to replace it"
        )
        return Decision("P7a", Fail(message), f"pool {name} has another protocol")
    if pool.lb_algorithm != io.LB_ALGORITHM:
        update = io.UpdatePool(scope=p.scope, id=pool.id, lb_algorithm=io.LB_ALGORITHM)
        return Decision("P7a", update, f"set the lb_algorithm of pool {name} to {io.LB_ALGORITHM}")
    return pool


def _listener(p: _Pass, listener: Listener, pool: io.PoolView) -> Decision | None:
    """P7b: find or create; converge allowed CIDRs, default pool and idle timeouts in place."""
    name = io.listener_name(p.uid, listener.name)
    seen = _one([x for x in p.tree.listeners if x.name == name], name)
    if isinstance(seen, Fail):
        return Decision("P7b", seen, f"more than one listener is named {name}")
    if seen is None:
        timeout = idle_timeout_ms(listener)
        create = io.CreateListener(
            scope=p.scope,
            load_balancer_id=p.lb.id,
            name=name,
            protocol=listener.protocol,
            port=listener.port,
            default_pool_id=pool.id,
            allowed_cidrs=sorted(listener.allowed_cidrs),
            timeout_client_data=timeout,
            timeout_member_data=timeout,
        )
        return Decision("P7b", create, f"create listener {name} ({listener.protocol}/{listener.port})")
    if seen.protocol != listener.protocol or seen.port != listener.port:
        message = (
            f"listener {name} is {seen.protocol}/{seen.port}, not {listener.protocol}/{listener.port}; "
            "give the listener a new name to replace it"
        )
        return Decision("P7b", Fail(message), f"listener {name} has another protocol or port")
    drift = listener_drift(listener, pool.id, seen)
    if not drift:
        return None
    update = io.UpdateListener(scope=p.scope, id=seen.id, **drift)
    return Decision("P7b", update, f"update listener {name}: {', '.join(sorted(drift))}")


def _members(p: _Pass, listener: Listener, pool: io.PoolView) -> Decision | None:
    """P7c: one batch update when the member set differs."""
    want = sorted({(m.address, m.port) for m in listener.pool.members})
    if sorted((m.address, m.port) for m in (p.members or {}).get(pool.id, ())) == want:
        return None
    batch = io.ReplaceMembers(
        scope=p.scope, pool_id=pool.id, members=[io.Member(address=a, port=port) for a, port in want]
    )
    return Decision("P7c", batch, f"replace the members of pool {pool.name} with {len(want)} member(s)")


def _monitor(p: _Pass, listener: Listener, pool: io.PoolView) -> Decision | None:
    """P7d: find or create; converge delay, timeout and retries. No health check: P8 prunes the monitor."""
    check = listener.health_check
    if check is None:
        return None
    name, kind = io.monitor_name(p.uid, listener.name), monitor_type(listener)
    monitor = _one([m for m in p.tree.monitors if m.name == name], name)
    if isinstance(monitor, Fail):
        return Decision("P7d", monitor, f"more than one health monitor is named {name}")
    want = (check.delay_seconds, check.timeout_seconds, check.healthy_threshold, check.unhealthy_threshold)
    if monitor is None:
        create = io.CreateMonitor(
            scope=p.scope,
            pool_id=pool.id,
            name=name,
            type=kind,
            delay=want[0],
            timeout=want[1],
            max_retries=want[2],
            max_retries_down=want[3],
        )
        return Decision("P7d", create, f"create health monitor {name} ({kind})")
    if monitor.type != kind or monitor.pool_id not in (None, pool.id):
        message = f"health monitor {name} does not match its listener (type or pool differ)"
        return Decision("P7d", Fail(message), f"health monitor {name} does not match its listener")
    if (monitor.delay, monitor.timeout, monitor.max_retries, monitor.max_retries_down) == want:
        return None
    update = io.UpdateMonitor(
        scope=p.scope,
        id=monitor.id,
        delay=want[0],
        timeout=want[1],
        max_retries=want[2],
        max_retries_down=want[3],
    )
    return Decision("P7d", update, f"update health monitor {name}: delay, timeout and retries")


def _prune_monitor_or_pool(p: _Pass) -> Decision | None:
    """P8: one orphan monitor or pool per pass. A monitor on an orphan pool goes with the pool (Octavia
    cascades it): one locked step instead of two."""
    stale_pools = [
        x for x in p.tree.pools if x.name.endswith("-pool") and x.name not in p.wanted(io.PoolView)
    ]
    doomed = {x.id for x in stale_pools}
    wanted_monitors = {io.monitor_name(p.uid, ls.name) for ls in p.spec.listeners if ls.health_check}
    for m in p.tree.monitors:
        if m.name.endswith("-monitor") and m.name not in wanted_monitors and m.pool_id not in doomed:
            prune = io.DeleteObject(scope=p.scope, kind="healthmonitor", id=m.id)
            return Decision("P8", prune, f"delete health monitor {m.name} (no longer in the spec)")
    if stale_pools:
        prune = io.DeleteObject(scope=p.scope, kind="pool", id=stale_pools[0].id)
        return Decision("P8", prune, f"delete pool {stale_pools[0].name} (no longer in the spec)")
    return None


# --- delete (D1…D4) -----------------------------------------------------------------------------------
def delete(
    spec: LoadBalancerSpec, uid: str, realised: bool, obs: Observation, scope: io.Scope | None = None
) -> Decision:
    """The next step of the delete pass; the cascade is waited out by later passes (D1 or D4)."""
    name = io.lb_name(uid)
    if not realised:
        return Decision("D1", Done(), "never realised: no create was attempted, so nothing can exist")
    scope = scope or scope_of(spec)
    if obs.found is None:
        return Decision("D1", io.FindLoadBalancer(scope=scope, name=name), f"find load balancer {name}")
    lb = _one(obs.found, name)
    if isinstance(lb, Fail):
        return Decision("D1", lb, f"more than one load balancer is named {name}")
    if lb is None:
        return Decision("D1", Done(), f"load balancer {name} is gone")
    if lb.provisioning_status in io.PENDING:
        return Decision("D4", Wait(), f"waiting for load balancer {name} to go ({lb.provisioning_status})")
    if lb.vip_port_id and obs.tree is None:
        read = io.FindFloatingIps(scope=scope, port_id=lb.vip_port_id)
        return Decision("D2", read, f"find the floating IPs on VIP port {lb.vip_port_id}")
    if obs.tree is not None and obs.tree.floating_ips:
        # First: the cascade removes the VIP port that anchors the floating IP (404 counts as deleted).
        fip = obs.tree.floating_ips[0]
        return Decision(
            "D2", io.DeleteFloatingIp(scope=scope, id=fip.id), f"delete floating IP {fip.address}"
        )
    cascade = io.DeleteObject(scope=scope, kind="loadbalancer", id=lb.id, cascade=True)
    return Decision("D3", cascade, f"cascade-delete load balancer {name}")
