"""LoadBalancer: the whole Octavia topology, converged in place (contract: ../shared/spec/octavia.md).

A pass follows the spec page's order (step labels P1..P8 below). Objects are re-found by their deterministic
names (lb-{uid}, lb-{uid}-{listener}-listener|-pool|-monitor), post-filtered for exact names; two exact
matches are a consistency error. A pass makes at most ONE mutating call: every mutation leaves the load
balancer PENDING_UPDATE, so the pass ends there and a durable timer (requeue_after) re-runs it, which reads
the settled state first. PENDING_* anywhere is waited out the same way; any other non-ACTIVE status is a
consistency error (Available=False, reason Errored) raised before the pass mutates anything.
"""

from __future__ import annotations

import asyncio
import ipaddress

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from osprov.api import octavia_io as io
    from osprov.api.common import AvailableReason
    from osprov.api.messages import ConditionState, EntityInput
    from osprov.api.octavia import Listener, LoadBalancerSpec, LoadBalancerStatus
    from osprov.api.registry import AVAILABLE
    from osprov.api.state import LoadBalancerState
    from osprov.workflows.calls import call
    from osprov.workflows.entity import Entity, Outcome, StatusBase
    from osprov.workflows.loadbalancer_rules import (
        consistency,
        exactly_one,
        idle_timeout_ms,
        listener_drift,
        monitor_type,
        pool_protocol,
        settled,
    )

FIRST_WAIT_SECONDS = 0.5  # Octavia settles a step in 0.2-0.4 s on a quiet cloud
MAX_WAIT_SECONDS = 10.0
# One message for every converging pass, so the status is written once, not after every step.
PROVISIONING_MESSAGE = "converging the Octavia topology; Octavia settles (ACTIVE) between steps"


@workflow.defn(name="LoadBalancer")
class LoadBalancerWorkflow(Entity[LoadBalancerSpec, LoadBalancerState]):
    KIND = "LoadBalancer"
    STATE = LoadBalancerState

    @workflow.run
    async def run(self, inp: EntityInput) -> str:
        return await self.run_loop(inp)

    # ----- outcomes ---------------------------------------------------------------------------------
    def _wait(self, message: str, *, mutated: bool) -> Outcome:
        """Still converging: a durable timer re-runs the pass (short after our own mutation, backing off
        while Octavia stays PENDING)."""
        waits = 0 if mutated else self.k.waits
        self.k.waits = waits + 1
        self.set_step(message)  # the detail goes to the step (query, Web UI); the status stays put
        return Outcome(
            conditions=[
                ConditionState.of(AVAILABLE, False, AvailableReason.PROVISIONING, PROVISIONING_MESSAGE)
            ],
            requeue_after=min(FIRST_WAIT_SECONDS * 2**waits, MAX_WAIT_SECONDS),
        )

    def status(self, base: StatusBase) -> LoadBalancerStatus:
        k = self.k
        return LoadBalancerStatus(
            **base, load_balancer_id=k.load_balancer_id, vip_address=k.vip_address, public_ip=k.public_ip
        )

    # ----- the pass ---------------------------------------------------------------------------------
    async def reconcile(self, spec: LoadBalancerSpec, full: bool) -> Outcome:  # noqa: C901 - becomes a decision table (issue 16)
        uid = self.st.ref.uid
        scope = io.Scope(project=spec.project.name, domain=spec.project.domain)
        name = io.lb_name(uid)

        # P1: find lb-{uid}; create it when absent.
        self.set_step("P1 finding the load balancer")
        found = await call(
            io.FIND_LOAD_BALANCER,
            io.FindLoadBalancer(scope=scope, name=name),
            summary=f"find load balancer {name}",
        )
        lb = exactly_one(found, name)
        if lb is None:
            self.k.realised = True  # from here on, delete must look in the cloud
            lb = await call(
                io.CREATE_LOAD_BALANCER,
                io.CreateLoadBalancer(
                    scope=scope,
                    name=name,
                    vip_network_id=spec.vip_network_id,
                    vip_subnet_id=spec.vip_subnet_id,
                    vip_address=spec.vip_address,
                ),
                summary=f"create load balancer {name}",
            )
            self.k.load_balancer_id, self.k.vip_address = lb.id, lb.vip_address
            return self._wait("P1 load balancer created; waiting for ACTIVE", mutated=True)
        self.k.realised = True
        self.k.load_balancer_id, self.k.vip_address = lb.id, lb.vip_address

        # P2: a requested VIP address must be the actual one.
        if spec.vip_address and (
            not lb.vip_address
            or ipaddress.ip_address(spec.vip_address) != ipaddress.ip_address(lb.vip_address)
        ):
            raise consistency(
                f"the load balancer's VIP is {lb.vip_address or 'unset'}, not the requested {spec.vip_address}; "
                "the VIP cannot change: delete and recreate the resource to move it"
            )
        # P3: classify the load balancer.
        if not settled(lb.provisioning_status, f"load balancer {name}"):
            return self._wait(f"P3 waiting for load balancer {lb.provisioning_status}", mutated=False)
        # P4: the VIP must be realised.
        if not lb.vip_address or not lb.vip_port_id:
            raise consistency(f"load balancer {name} is ACTIVE but has no VIP address or VIP port")

        # Observe the whole owned tree before any mutation: a child in ERROR stops the pass untouched.
        prefix = f"{name}-"
        children = io.ListChildren(scope=scope, load_balancer_id=lb.id, prefix=prefix)
        # Independent reads run in parallel (one round trip instead of four on a busy worker).
        listeners, pools, monitors, fips = await asyncio.gather(
            call(io.LIST_LISTENERS, children, summary=f"list {prefix}*listener"),
            call(io.LIST_POOLS, children, summary=f"list {prefix}*pool"),
            call(io.LIST_MONITORS, children, summary=f"list {prefix}*monitor"),
            call(
                io.FIND_FLOATING_IPS,
                io.FindFloatingIps(scope=scope, port_id=lb.vip_port_id),
                summary=f"find floating IPs of VIP port {lb.vip_port_id}",
            ),
        )
        owned: list[io.ListenerView | io.PoolView | io.MonitorView] = [*listeners, *pools, *monitors]
        for obj in owned:
            if not settled(obj.provisioning_status, obj.name):
                return self._wait(f"waiting for {obj.name} ({obj.provisioning_status})", mutated=False)
        wanted_pools = {io.pool_name(uid, ls.name) for ls in spec.listeners}
        ours = [p for p in pools if p.name in wanted_pools]
        member_lists = await asyncio.gather(
            *(
                call(
                    io.LIST_MEMBERS,
                    io.PoolRef(scope=scope, pool_id=p.id),
                    summary=f"members of {p.name}",
                )
                for p in ours
            )
        )
        members = {p.id: m for p, m in zip(ours, member_lists, strict=True)}
        for pool_id, pool_members in members.items():
            for m in pool_members:
                if not settled(m.provisioning_status, f"member {m.address}:{m.port}"):
                    return self._wait(f"waiting for the members of pool {pool_id}", mutated=False)

        # P5: the floating IP on the VIP port.
        await self._floating_ip(spec, scope, lb.vip_port_id, fips)

        # P6: prune one orphan listener first (frees the port for a renamed listener).
        wanted = {io.listener_name(uid, ls.name) for ls in spec.listeners}
        orphan = next(
            (ls for ls in listeners if ls.name.endswith("-listener") and ls.name not in wanted), None
        )
        if orphan is not None:
            await self._delete_object(scope, "listener", orphan.id, orphan.name)
            return self._wait(f"P6 pruned listener {orphan.name}; waiting for ACTIVE", mutated=True)

        # P7: each listener's pool, listener, members and monitor.
        for listener in spec.listeners:
            outcome = await self._listener(scope, lb.id, listener, listeners, pools, monitors, members)
            if outcome is not None:
                return outcome

        # P8: prune one orphan monitor or pool per pass until nothing is orphaned. A monitor on an orphan
        # pool is left to the pool's delete, which Octavia cascades to it (one locked step instead of two).
        want_monitors = {io.monitor_name(uid, ls.name) for ls in spec.listeners if ls.health_check}
        want_pools = {io.pool_name(uid, ls.name) for ls in spec.listeners}
        stale_pools = [p for p in pools if p.name.endswith("-pool") and p.name not in want_pools]
        doomed = {p.id for p in stale_pools}
        stale_monitors = [
            m
            for m in monitors
            if m.name.endswith("-monitor") and m.name not in want_monitors and m.pool_id not in doomed
        ]
        candidates: list[io.MonitorView | io.PoolView] = [*stale_monitors, *stale_pools]
        stale = candidates[0] if candidates else None
        if stale is not None:
            kind: io.ObjectKind = "healthmonitor" if isinstance(stale, io.MonitorView) else "pool"
            await self._delete_object(scope, kind, stale.id, stale.name)
            return self._wait(f"P8 pruned {stale.name}; waiting for ACTIVE", mutated=True)

        self.k.waits = 0
        public = f", public IP {self.k.public_ip}" if self.k.public_ip else ""
        return Outcome(
            conditions=[
                ConditionState.of(
                    AVAILABLE,
                    True,
                    AvailableReason.PROVISIONED,
                    f"load balancer {name} is ACTIVE with {len(spec.listeners)} listener(s), "
                    f"VIP {lb.vip_address}{public}",
                )
            ]
        )

    async def _floating_ip(
        self, spec: LoadBalancerSpec, scope: io.Scope, port_id: str, fips: list[io.FloatingIpView]
    ) -> None:
        """Neutron calls do not lock the load balancer: the pass goes on after them."""
        self.set_step("P5 floating IP")
        fip = exactly_one(fips, f"floating IPs on VIP port {port_id} (more than one)")
        if fip is not None and spec.public_ip:
            self.k.public_ip = fip.address
        elif fip is not None:
            await call(
                io.DELETE_FLOATING_IP,
                io.DeleteFloatingIp(scope=scope, id=fip.id),
                summary=f"delete floating IP {fip.address}",
            )
            self.k.public_ip = None
        elif spec.public_ip:
            fip = await call(
                io.CREATE_FLOATING_IP,
                io.CreateFloatingIp(scope=scope, port_id=port_id),
                summary=f"create floating IP on VIP port {port_id}",
            )
            self.k.public_ip = fip.address
        else:
            self.k.public_ip = None

    async def _listener(
        self,
        scope: io.Scope,
        lb_id: str,
        listener: Listener,
        listeners: list[io.ListenerView],
        pools: list[io.PoolView],
        monitors: list[io.MonitorView],
        members_by_pool: dict[str, list[io.MemberView]],
    ) -> Outcome | None:
        uid = self.st.ref.uid
        lname, pname = io.listener_name(uid, listener.name), io.pool_name(uid, listener.name)

        # P7a pool: find or create; fix lb-method drift (its protocol cannot change in place).
        pool = exactly_one([p for p in pools if p.name == pname], pname)
        if pool is None:
            await call(
                io.CREATE_POOL,
                io.CreatePool(
                    scope=scope, load_balancer_id=lb_id, name=pname, protocol=pool_protocol(listener)
                ),
                summary=f"create pool {pname} ({pool_protocol(listener)})",
            )
            return self._wait(f"P7a created pool {pname}; waiting for ACTIVE", mutated=True)
        if pool.protocol != pool_protocol(listener):
            raise consistency(
                f"pool {pname} has protocol {pool.protocol}, not {pool_protocol(listener)}; Octavia cannot "
                "change it in place: give the listener a new name to replace it"
            )
        if pool.lb_algorithm != io.LB_ALGORITHM:
            await call(
                io.UPDATE_POOL,
                io.UpdatePool(scope=scope, id=pool.id, lb_algorithm=io.LB_ALGORITHM),
                summary=f"update pool {pname}: lb_algorithm",
            )
            return self._wait(f"P7a updated pool {pname}; waiting for ACTIVE", mutated=True)

        # P7b listener: find or create; converge CIDRs, default pool and idle timeouts in place.
        seen = exactly_one([ls for ls in listeners if ls.name == lname], lname)
        if seen is None:
            timeout = idle_timeout_ms(listener)
            await call(
                io.CREATE_LISTENER,
                io.CreateListener(
                    scope=scope,
                    load_balancer_id=lb_id,
                    name=lname,
                    protocol=listener.protocol,
                    port=listener.port,
                    default_pool_id=pool.id,
                    allowed_cidrs=sorted(listener.allowed_cidrs),
                    timeout_client_data=timeout,
                    timeout_member_data=timeout,
                ),
                summary=f"create listener {lname} ({listener.protocol}/{listener.port})",
            )
            return self._wait(f"P7b created listener {lname}; waiting for ACTIVE", mutated=True)
        if seen.protocol != listener.protocol or seen.port != listener.port:
            raise consistency(
                f"listener {lname} is {seen.protocol}/{seen.port}, not {listener.protocol}/{listener.port}; "
                "give the listener a new name to replace it"
            )
        drift = listener_drift(listener, pool.id, seen)
        if drift:
            await call(
                io.UPDATE_LISTENER,
                io.UpdateListener(scope=scope, id=seen.id, **drift),
                summary=f"update listener {lname}: {', '.join(sorted(drift))}",
            )
            return self._wait(f"P7b updated listener {lname}; waiting for ACTIVE", mutated=True)

        # P7c members: one batch update when the set differs.
        members = members_by_pool.get(pool.id, [])
        want = sorted({(m.address, m.port) for m in listener.pool.members})
        if sorted((m.address, m.port) for m in members) != want:
            await call(
                io.REPLACE_MEMBERS,
                io.ReplaceMembers(
                    scope=scope, pool_id=pool.id, members=[io.Member(address=a, port=p) for a, p in want]
                ),
                summary=f"batch update members of {pname}: {len(want)} member(s)",
            )
            return self._wait(f"P7c updated members of {pname}; waiting for ACTIVE", mutated=True)

        # P7d health monitor: find or create; converge delay, timeout, retries.
        check = listener.health_check
        if check is None:
            return None  # an existing monitor is an orphan: pruned in P8
        mname = io.monitor_name(uid, listener.name)
        monitor = exactly_one([m for m in monitors if m.name == mname], mname)
        want_hm = (
            check.delay_seconds,
            check.timeout_seconds,
            check.healthy_threshold,
            check.unhealthy_threshold,
        )
        if monitor is None:
            await call(
                io.CREATE_MONITOR,
                io.CreateMonitor(
                    scope=scope,
                    pool_id=pool.id,
                    name=mname,
                    type=monitor_type(listener),
                    delay=want_hm[0],
                    timeout=want_hm[1],
                    max_retries=want_hm[2],
                    max_retries_down=want_hm[3],
                ),
                summary=f"create health monitor {mname} ({monitor_type(listener)})",
            )
            return self._wait(f"P7d created health monitor {mname}; waiting for ACTIVE", mutated=True)
        if monitor.type != monitor_type(listener) or monitor.pool_id not in (None, pool.id):
            raise consistency(f"health monitor {mname} does not match its listener (type or pool differ)")
        if (monitor.delay, monitor.timeout, monitor.max_retries, monitor.max_retries_down) != want_hm:
            await call(
                io.UPDATE_MONITOR,
                io.UpdateMonitor(
                    scope=scope,
                    id=monitor.id,
                    delay=want_hm[0],
                    timeout=want_hm[1],
                    max_retries=want_hm[2],
                    max_retries_down=want_hm[3],
                ),
                summary=f"update health monitor {mname}: thresholds",
            )
            return self._wait(f"P7d updated health monitor {mname}; waiting for ACTIVE", mutated=True)
        return None

    async def _delete_object(
        self, scope: io.Scope, kind: io.ObjectKind, obj_id: str, name: str, cascade: bool = False
    ) -> None:
        await call(
            io.DELETE,
            io.DeleteObject(scope=scope, kind=kind, id=obj_id, cascade=cascade),
            summary=f"delete {kind} {name}" + (" (cascade)" if cascade else ""),
        )

    # ----- delete -----------------------------------------------------------------------------------
    async def finalize(self, spec: LoadBalancerSpec) -> None:
        if not self.k.realised:
            return  # never realised: no create was ever attempted, so nothing can exist
        scope = io.Scope(project=spec.project.name, domain=spec.project.domain)
        name = io.lb_name(self.st.ref.uid)
        waits = 0
        while True:
            self.set_step("D1 finding the load balancer to delete")
            found = await call(
                io.FIND_LOAD_BALANCER,
                io.FindLoadBalancer(scope=scope, name=name),
                summary=f"find load balancer {name}",
            )
            lb = exactly_one(found, name)
            if lb is None:
                self.k.load_balancer_id = self.k.vip_address = self.k.public_ip = None
                return
            if lb.provisioning_status not in io.PENDING:
                # D2: the floating IP first (the cascade removes the VIP port that anchors it), then cascade.
                if lb.vip_port_id:
                    fips = await call(
                        io.FIND_FLOATING_IPS,
                        io.FindFloatingIps(scope=scope, port_id=lb.vip_port_id),
                        summary=f"find floating IPs of VIP port {lb.vip_port_id}",
                    )
                    for fip in fips:
                        await call(
                            io.DELETE_FLOATING_IP,
                            io.DeleteFloatingIp(scope=scope, id=fip.id),
                            summary=f"delete floating IP {fip.address}",
                        )
                self.set_step("D3 cascade-deleting the load balancer")
                await self._delete_object(scope, "loadbalancer", lb.id, name, cascade=True)
                waits = 0
            # D4: wait (durable timer) until a later read finds it gone.
            self.set_step(f"D4 waiting for load balancer {name} to go ({lb.provisioning_status})")
            await workflow.sleep(
                min(FIRST_WAIT_SECONDS * 2**waits, MAX_WAIT_SECONDS),
                summary=f"wait for Octavia to delete load balancer {name} ({lb.provisioning_status})",
            )
            waits += 1
