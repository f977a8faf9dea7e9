"""Octavia activities: each makes one idempotent load-balancer API call in the resource's project.

Names and models: api/octavia_io.py. Lookups post-filter Octavia's (fuzzy) name filters for exact names;
the workflow decides what duplicates mean. Creates are create-if-absent (exact-name lookup first), so a
create retried after a worker crash adopts the object the first attempt made. The load-balancer client is
pinned to microversion 2.22 (PROXYV2 pools). Errors leave as typed ApplicationErrors (activities/errors.py).
"""

from __future__ import annotations

import asyncio
from typing import Any

import openstack.exceptions
from openstack.load_balancer.v2._proxy import Proxy as LoadBalancerProxy
from temporalio.exceptions import ApplicationError

from osprov.activities import cloud, neutron, siblings
from osprov.activities.cloud import openstack_errors
from osprov.activities.contract import implements, implements_async
from osprov.api import octavia_io as io
from osprov.api.errors import NOT_FOUND

SERVICE = "Octavia"
# R1's four reads: the listeners, pools and monitors of a load balancer, and the floating IPs on its VIP port.
Tree = tuple[list[io.ListenerView], list[io.PoolView], list[io.MonitorView], list[io.FloatingIpView]]


def _lb(scope: io.Scope) -> LoadBalancerProxy:
    """The project-scoped load-balancer client, pinned to the microversion PROXYV2 needs."""
    conn = cloud.scoped_connection(scope.project, scope.domain, scope.credential)
    proxy: LoadBalancerProxy = conn.load_balancer
    proxy.default_microversion = io.OCTAVIA_MICROVERSION
    return proxy


def _lb_view(r: Any) -> io.LoadBalancerView:
    return io.LoadBalancerView(
        id=r.id,
        name=r.name or "",
        provisioning_status=r.provisioning_status or "",
        vip_address=r.vip_address or None,
        vip_port_id=r.vip_port_id or None,
    )


def _listener_view(r: Any) -> io.ListenerView:
    return io.ListenerView(
        id=r.id,
        name=r.name or "",
        provisioning_status=r.provisioning_status or "",
        protocol=r.protocol or "",
        port=int(r.protocol_port or 0),
        allowed_cidrs=sorted(r.allowed_cidrs or []),
        default_pool_id=r.default_pool_id or None,
        timeout_client_data=r.timeout_client_data,
        timeout_member_data=r.timeout_member_data,
    )


def _pool_view(r: Any) -> io.PoolView:
    return io.PoolView(
        id=r.id,
        name=r.name or "",
        provisioning_status=r.provisioning_status or "",
        protocol=r.protocol or "",
        lb_algorithm=r.lb_algorithm or "",
    )


def _monitor_view(r: Any) -> io.MonitorView:
    pools = r.pools or []
    return io.MonitorView(
        id=r.id,
        name=r.name or "",
        provisioning_status=r.provisioning_status or "",
        type=r.type or "",
        pool_id=r.pool_id or (pools[0]["id"] if pools else None),
        delay=int(r.delay or 0),
        timeout=int(r.timeout or 0),
        max_retries=int(r.max_retries or 0),
        max_retries_down=int(r.max_retries_down or 0),
    )


def _find_lbs(proxy: LoadBalancerProxy, name: str) -> list[io.LoadBalancerView]:
    found = [_lb_view(r) for r in proxy.load_balancers(name=name) if r.name == name]
    return sorted((v for v in found if v.provisioning_status != "DELETED"), key=lambda v: v.id)


@implements(io.FIND_LOAD_BALANCER)
def find_load_balancer(req: io.FindLoadBalancer) -> list[io.LoadBalancerView]:
    """Every load balancer named exactly req.name (DELETED ones excluded), sorted by ID."""
    with openstack_errors(f"find load balancer {req.name}", service=SERVICE):
        return _find_lbs(_lb(req.scope), req.name)


@implements(io.FIND_IMPORTED_LOAD_BALANCER)
def find_imported_load_balancer(req: io.FindImportedLoadBalancer) -> list[io.LoadBalancerView]:
    """The project's load balancer with req.id, or every one of the project named exactly req.name
    (DELETED ones excluded). Another project's counts as absent: an admin token lists every project's."""
    with openstack_errors(f"find imported load balancer {req.id or req.name}", service=SERVICE):
        proxy = _lb(req.scope)
        project = proxy.get_project_id()
        if req.id is None:
            listed = proxy.load_balancers(name=req.name, project_id=project)
            found = [r for r in listed if r.name == req.name and r.project_id == project]
        else:
            try:
                found = [r for r in [proxy.get_load_balancer(req.id)] if r.project_id == project]
            except openstack.exceptions.NotFoundException:
                found = []
        views = (_lb_view(r) for r in found)
        return sorted((v for v in views if v.provisioning_status != "DELETED"), key=lambda v: v.id)


@implements_async(io.READ_TOPOLOGY)
async def read_topology(req: io.ReadTopology) -> io.Topology:
    """P1, R1, R2 in one activity: the exact-name lookup and (one ACTIVE load balancer with a VIP port) its
    children, the floating IPs on its VIP port and the spec's pools' members. With `req.known` (the IDs the
    last read found) all of it is read at once; otherwise in the rounds whose IDs each need."""
    if req.known is not None:
        return await _read_at_once(req, req.known)
    found = await asyncio.to_thread(find_load_balancer, io.FindLoadBalancer(scope=req.scope, name=req.name))
    lb = _one_active(found)
    if lb is None:
        return io.Topology(found=found)
    return await _topology(req, found, await _read_tree(req, lb.id, str(lb.vip_port_id)), {})


def _one_active(found: list[io.LoadBalancerView]) -> io.LoadBalancerView | None:
    """The one ACTIVE load balancer with a VIP port whose tree R0 reads (None: P1 decides from the lookup)."""
    lb = found[0] if len(found) == 1 else None
    return lb if lb is not None and lb.provisioning_status == io.ACTIVE and lb.vip_port_id else None


async def _topology(
    req: io.ReadTopology, found: list[io.LoadBalancerView], tree: Tree, read: dict[str, list[io.MemberView]]
) -> io.Topology:
    """R0's answer: the tree, and the members of the spec's pools (those not in `read` are read now)."""
    listeners, pools, monitors, fips = tree
    ours = [p for p in pools if p.name in req.pools]
    unread = [p for p in ours if p.id not in read]
    more = await asyncio.gather(
        *(asyncio.to_thread(list_members, io.PoolRef(scope=req.scope, pool_id=p.id)) for p in unread)
    )
    members = read | dict(zip((p.id for p in unread), more, strict=True))
    return io.Topology(
        found=found,
        listeners=listeners,
        pools=pools,
        monitors=monitors,
        floating_ips=fips,
        members={p.id: members[p.id] for p in ours},
    )


async def _read_tree(req: io.ReadTopology, lb_id: str, vip_port_id: str) -> Tree:
    children = io.ListChildren(scope=req.scope, load_balancer_id=lb_id, prefix=req.prefix)
    listeners, pools, monitors, fips = await asyncio.gather(
        asyncio.to_thread(list_listeners, children),
        asyncio.to_thread(list_pools, children),
        asyncio.to_thread(list_monitors, children),
        asyncio.to_thread(
            neutron.find_floating_ips, io.FindFloatingIps(scope=req.scope, port_id=vip_port_id)
        ),
    )
    return listeners, pools, monitors, fips


def _members_if_pool(ref: io.PoolRef) -> list[io.MemberView] | None:
    """A guessed pool's members; None when that pool is gone (the guess was stale)."""
    try:
        return list_members(ref)
    except ApplicationError as err:
        if err.type == NOT_FOUND:
            return None
        raise


async def _read_at_once(req: io.ReadTopology, known: io.KnownTopology) -> io.Topology:
    """The lookup, the tree of the known load balancer and the known pools' members in one round. The
    answer is the rounds' answer: the guessed reads are used only when the lookup finds exactly that load
    balancer ACTIVE on that VIP port. Otherwise what the rounds would read after the lookup is read:
    nothing (no single ACTIVE load balancer), or the tree of the one found. A spec pool the guess missed
    (or got wrong) has its members read after."""
    guessed = {name: pool_id for name, pool_id in known.pools.items() if name in req.pools}
    lookup = io.FindLoadBalancer(scope=req.scope, name=req.name)
    guessed_reads = asyncio.gather(
        *(
            asyncio.to_thread(_members_if_pool, io.PoolRef(scope=req.scope, pool_id=pool_id))
            for pool_id in guessed.values()
        )
    )
    (found, tree), guessed_members = await asyncio.gather(
        asyncio.gather(
            asyncio.to_thread(find_load_balancer, lookup),
            _read_tree(req, known.load_balancer_id, known.vip_port_id),
        ),
        guessed_reads,
    )
    lb = _one_active(found)
    if lb is None:
        return io.Topology(found=found)  # the rounds' answer too: they stop at the lookup
    if (lb.id, lb.vip_port_id) != (known.load_balancer_id, known.vip_port_id):
        return await _topology(req, found, await _read_tree(req, lb.id, str(lb.vip_port_id)), {})
    read = {i: m for i, m in zip(guessed.values(), guessed_members, strict=True) if m is not None}
    return await _topology(req, found, tree, read)


def settled(found: list[io.LoadBalancerView], gone: bool) -> bool:
    """Whether a wait on Octavia is over: the load balancer is gone, or (not waiting for that) ACTIVE or ERROR."""
    if not found:
        return True
    return not gone and found[0].provisioning_status in ("ACTIVE", "ERROR")


def _read_by_id(req: io.AwaitLoadBalancer) -> list[io.LoadBalancerView]:
    with openstack_errors(f"read load balancer {req.id}", service=SERVICE):
        try:
            view = _lb_view(_lb(req.scope).get_load_balancer(req.id))
        except openstack.exceptions.NotFoundException:
            return []
        return [] if view.provisioning_status == "DELETED" else [view]


@implements_async(io.AWAIT_LOAD_BALANCER)
async def await_load_balancer(req: io.AwaitLoadBalancer) -> list[io.LoadBalancerView]:
    """One activity for a whole wait on Octavia (a read by ID every 0.2 s, as a plain script polls)
    instead of a workflow timer and a pass per read; returns the last read, settled or not."""
    return await cloud.poll(
        lambda: _read_by_id(req),
        lambda found: settled(found, req.gone),
        req.interval_seconds,
        req.within_seconds,
        req.busy_seen_at,
    )


@implements_async(io.AWAIT_TOPOLOGY)
async def await_topology(req: io.AwaitTopology) -> io.AwaitedTopology:
    """The wait for Octavia, then, once it settled, the next pass's R0 read (by exact name, as a pass
    starts) in the same activity; the wait's last read tells that read which load balancer to expect."""
    last = await await_load_balancer(req.wait)
    if not settled(last, req.wait.gone):
        return io.AwaitedTopology()
    if req.members_of is not None and last and last[0].provisioning_status == io.ACTIVE:
        members = await _members_of(req.read.scope, req.members_of)
        if members is not None:  # R0m: the changed pools' members, and the wait's read
            return io.AwaitedTopology(topology=io.Topology(found=last, members=members))
    read = req.read
    if last and last[0].vip_port_id:  # the wait's own read names the load balancer and its VIP port
        pools = read.known.pools if read.known is not None else {}
        known = io.KnownTopology(load_balancer_id=last[0].id, vip_port_id=last[0].vip_port_id, pools=pools)
        read = read.model_copy(update={"known": known})
    return io.AwaitedTopology(topology=await read_topology(read))


async def _members_of(scope: io.Scope, pool_ids: list[str]) -> dict[str, list[io.MemberView]] | None:
    """These pools' members, read at once; None when one of the pools is gone (R0 reads instead)."""
    lists = await asyncio.gather(
        *(asyncio.to_thread(_members_if_pool, io.PoolRef(scope=scope, pool_id=p)) for p in pool_ids)
    )
    if any(m is None for m in lists):
        return None
    return {p: m for p, m in zip(pool_ids, lists, strict=True) if m is not None}


@implements(io.CREATE_LOAD_BALANCER)
def create_load_balancer(req: io.CreateLoadBalancer) -> io.LoadBalancerView:
    """Create-if-absent by exact name: an existing one is returned as it is."""
    with openstack_errors(f"create load balancer {req.name}", service=SERVICE):
        proxy = _lb(req.scope)
        existing = _find_lbs(proxy, req.name)
        if existing:
            return existing[0]
        network_id, subnet_id = req.vip_network_id, req.vip_subnet_id
        if network_id is None:  # a Network resource: its Neutron network and subnet, found in this project
            conn = cloud.scoped_connection(req.scope.project, req.scope.domain, req.scope.credential)
            network_id, own_subnet = siblings.network_and_subnet(
                conn,
                req.namespace,
                str(req.vip_network),
                project=req.scope.project,
                domain=req.scope.domain,
                credential=req.scope.credential,
            )
            subnet_id = subnet_id or own_subnet
        attrs: dict[str, Any] = {"name": req.name, "vip_network_id": network_id}
        if subnet_id:
            attrs["vip_subnet_id"] = subnet_id
        if req.vip_address:
            attrs["vip_address"] = req.vip_address
        return _lb_view(proxy.create_load_balancer(**attrs))


def _children(items: Any, prefix: str) -> list[Any]:
    return sorted((r for r in items if (r.name or "").startswith(prefix)), key=lambda r: r.id)


def _adoptable(items: Any, name: str) -> Any | None:
    """The exact-name match with the lowest ID (Octavia's name filter is fuzzy), or None."""
    return min((r for r in items if r.name == name), key=lambda r: r.id, default=None)


@implements(io.LIST_LISTENERS)
def list_listeners(req: io.ListChildren) -> list[io.ListenerView]:
    """Listeners of the load balancer whose names start with req.prefix."""
    with openstack_errors(f"list listeners of load balancer {req.load_balancer_id}", service=SERVICE):
        # Listener's query key is load_balancer_id (Pool's is loadbalancer_id); openstacksdk drops a key
        # it does not know without a word, which would list every listener of the project.
        items = _lb(req.scope).listeners(load_balancer_id=req.load_balancer_id)
        return [_listener_view(r) for r in _children(items, req.prefix)]


def _listener_timeouts(client: int | None, member: int | None) -> dict[str, int]:
    return {
        k: v for k, v in (("timeout_client_data", client), ("timeout_member_data", member)) if v is not None
    }


@implements(io.CREATE_LISTENER)
def create_listener(req: io.CreateListener) -> io.ListenerView:
    """Create-if-absent by exact name on this load balancer."""
    with openstack_errors(f"create listener {req.name}", service=SERVICE):
        proxy = _lb(req.scope)
        found = proxy.listeners(load_balancer_id=req.load_balancer_id, name=req.name)
        existing = _adoptable(found, req.name)  # only this load balancer's: never another's of that name
        if existing is not None:
            return _listener_view(existing)
        created = proxy.create_listener(
            name=req.name,
            loadbalancer_id=req.load_balancer_id,
            protocol=req.protocol,
            protocol_port=req.port,
            default_pool_id=req.default_pool_id,
            allowed_cidrs=req.allowed_cidrs or None,
            **_listener_timeouts(req.timeout_client_data, req.timeout_member_data),
        )
        return _listener_view(created)


@implements(io.UPDATE_LISTENER)
def update_listener(req: io.UpdateListener) -> io.ListenerView:
    """One PUT of the given fields; the listener keeps its ID."""
    attrs: dict[str, Any] = _listener_timeouts(req.timeout_client_data, req.timeout_member_data)
    if req.allowed_cidrs is not None:
        attrs["allowed_cidrs"] = req.allowed_cidrs or None  # null clears the list
    if req.default_pool_id is not None:
        attrs["default_pool_id"] = req.default_pool_id
    with openstack_errors(f"update listener {req.id}", service=SERVICE):
        return _listener_view(_lb(req.scope).update_listener(req.id, **attrs))


@implements(io.LIST_POOLS)
def list_pools(req: io.ListChildren) -> list[io.PoolView]:
    with openstack_errors(f"list pools of load balancer {req.load_balancer_id}", service=SERVICE):
        items = _lb(req.scope).pools(loadbalancer_id=req.load_balancer_id)
        return [_pool_view(r) for r in _children(items, req.prefix)]


@implements(io.CREATE_POOL)
def create_pool(req: io.CreatePool) -> io.PoolView:
    """Create-if-absent by exact name on this load balancer."""
    with openstack_errors(f"create pool {req.name}", service=SERVICE):
        proxy = _lb(req.scope)
        existing = _adoptable(proxy.pools(loadbalancer_id=req.load_balancer_id, name=req.name), req.name)
        if existing is not None:
            return _pool_view(existing)
        created = proxy.create_pool(
            name=req.name,
            loadbalancer_id=req.load_balancer_id,
            protocol=req.protocol,
            lb_algorithm=req.lb_algorithm,
        )
        return _pool_view(created)


@implements(io.UPDATE_POOL)
def update_pool(req: io.UpdatePool) -> io.PoolView:
    with openstack_errors(f"update pool {req.id}", service=SERVICE):
        return _pool_view(_lb(req.scope).update_pool(req.id, lb_algorithm=req.lb_algorithm))


@implements(io.LIST_MEMBERS)
def list_members(req: io.PoolRef) -> list[io.MemberView]:
    with openstack_errors(f"list members of pool {req.pool_id}", service=SERVICE):
        return sorted(
            (
                io.MemberView(
                    id=m.id,
                    address=m.address or "",
                    port=int(m.protocol_port or 0),
                    provisioning_status=m.provisioning_status or "",
                )
                for m in _lb(req.scope).members(req.pool_id)
            ),
            key=lambda m: (m.address, m.port),
        )


@implements(io.REPLACE_MEMBERS)
def replace_members(req: io.ReplaceMembers) -> None:
    """Octavia's batch member update (PUT /lbaas/pools/{id}/members): one call, one PENDING_UPDATE.

    Idempotent: repeating it with the same list changes nothing."""
    body = {"members": [{"address": m.address, "protocol_port": m.port} for m in req.members]}
    with openstack_errors(f"replace members of pool {req.pool_id}", service=SERVICE):
        proxy = _lb(req.scope)
        response = proxy.put(
            f"/lbaas/pools/{req.pool_id}/members", json=body, microversion=io.OCTAVIA_MICROVERSION
        )
        openstack.exceptions.raise_from_response(response)


@implements(io.LIST_MONITORS)
def list_monitors(req: io.ListChildren) -> list[io.MonitorView]:
    """Health monitors of the project whose names start with req.prefix (names carry the LB's UID)."""
    with openstack_errors(f"list health monitors {req.prefix}*", service=SERVICE):
        return [_monitor_view(r) for r in _children(_lb(req.scope).health_monitors(), req.prefix)]


@implements(io.CREATE_MONITOR)
def create_monitor(req: io.CreateMonitor) -> io.MonitorView:
    """Create-if-absent by exact name."""
    with openstack_errors(f"create health monitor {req.name}", service=SERVICE):
        proxy = _lb(req.scope)
        existing = _adoptable(proxy.health_monitors(name=req.name), req.name)
        if existing is not None:
            return _monitor_view(existing)
        created = proxy.create_health_monitor(
            name=req.name,
            pool_id=req.pool_id,
            type=req.type,
            delay=req.delay,
            timeout=req.timeout,
            max_retries=req.max_retries,
            max_retries_down=req.max_retries_down,
        )
        return _monitor_view(created)


@implements(io.UPDATE_MONITOR)
def update_monitor(req: io.UpdateMonitor) -> io.MonitorView:
    with openstack_errors(f"update health monitor {req.id}", service=SERVICE):
        updated = _lb(req.scope).update_health_monitor(
            req.id,
            delay=req.delay,
            timeout=req.timeout,
            max_retries=req.max_retries,
            max_retries_down=req.max_retries_down,
        )
        return _monitor_view(updated)


@implements(io.DELETE)
def delete(req: io.DeleteObject) -> bool:
    """Delete by ID (cascade for a load balancer). True if deleted now, False if already gone."""
    with openstack_errors(f"delete {req.kind} {req.id}", service=SERVICE):
        proxy = _lb(req.scope)
        try:
            if req.kind == "loadbalancer":
                proxy.delete_load_balancer(req.id, ignore_missing=False, cascade=req.cascade)
            elif req.kind == "listener":
                proxy.delete_listener(req.id, ignore_missing=False)
            elif req.kind == "pool":
                proxy.delete_pool(req.id, ignore_missing=False)
            else:
                proxy.delete_health_monitor(req.id, ignore_missing=False)
        except openstack.exceptions.NotFoundException:
            return False
        return True


ACTIVITIES: list[Any] = [
    find_load_balancer,
    read_topology,
    find_imported_load_balancer,
    await_load_balancer,
    await_topology,
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
]
