"""LoadBalancer: the whole Octavia topology, converged in place (contract: ../shared/spec/octavia.md).

The decisions are pure tables in workflows/loadbalancer_decisions.py (step labels P1…P8, R1, R2, D1…D4;
docs/loadbalancer.md). This module executes them: it starts every pass with an empty observation, asks
for the next step, runs exactly that activity, folds the result in and asks again, until the pass ends
at one Octavia mutation (every mutation leaves the load balancer PENDING_UPDATE), a wait, a consistency
error or Done. A durable timer of the entity loop (requeue_after) then runs the next pass, which reads
the settled state first. Deleting works the same way, one short pass per re-check, so a stuck delete
never grows one run's history beyond the loop's continue-as-new bound.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from osprov.api import octavia_io as io
    from osprov.api.activity import Activity
    from osprov.api.common import AvailableReason
    from osprov.api.errors import CONFLICT, NOT_FOUND
    from osprov.api.messages import ConditionState, EntityInput
    from osprov.api.octavia import LoadBalancerSpec, LoadBalancerStatus
    from osprov.api.registry import AVAILABLE
    from osprov.api.state import LoadBalancerState
    from osprov.workflows import patches
    from osprov.workflows.calls import call, call_local
    from osprov.workflows.entity import Outcome, PassFailed, StatusBase, error_type
    from osprov.workflows.event_recorder import note
    from osprov.workflows.loadbalancer_decisions import (
        Decision,
        Done,
        Fail,
        Observation,
        ReadMembers,
        ReadTree,
        Tree,
        Wait,
        converge,
        delete,
        fold_members,
        fold_topology,
        members_end_the_pass,
    )
    from osprov.workflows.observe_import import Refused, Wanted, choose, mirror_load_balancer
    from osprov.workflows.plan import AFTER_WRITE, PlanStopped, Recorder
    from osprov.workflows.tenancy import CloudEntity, Where

FIRST_WAIT_SECONDS = 0.5  # Octavia settles a step in 0.2-0.4 s on a quiet cloud
MAX_WAIT_SECONDS = 10.0
# One message for every converging pass, so the status is written once, not after every step.
PROVISIONING_MESSAGE = "converging the Octavia topology; Octavia settles (ACTIVE) between steps"
DEPROVISIONING_MESSAGE = "deleting the Octavia load balancer; waiting until Octavia no longer has it"
# Deleting as passes of the entity loop (requeued, bounded by continue-as-new) instead of one pass
# that polls until the load balancer is gone (new commands: a status write, the loop's timer).
PATCH_FINALIZE_REQUEUE = "loadbalancer-finalize-requeue"
# O1…O4, OL1…OL3: managementPolicy unmanaged observes the imported load balancer (runs before it refused,
# calling nothing).
PATCH_OBSERVE = "loadbalancer-observe"
# After a mutation (or at a pass that finds Octavia busy), the wait for ACTIVE — or, deleting, for it to be
# gone — is one heartbeating activity (a read every 0.2 s, up to a minute), and the pass goes on with a fresh
# read; runs from before requeue a pass on a timer for every re-check.
PATCH_AWAIT = "loadbalancer-await-in-activity"
AWAIT_WITHIN_SECONDS = 60.0
# R0: a pass's reads (P1, R1, R2) are one activity instead of three rounds (runs from before read in rounds).
PATCH_READ_AT_ONCE = "loadbalancer-read-at-once"
# A step's wait for ACTIVE ends with the next step's R0 read in the same activity (one activity per step
# instead of two), and the first wait's "Provisioning" status write runs beside it; runs from before wait,
# then read in a separate activity.
PATCH_AWAIT_READS = "loadbalancer-await-reads-tree"
# A pass's reads (R0 and the lookups and lists of P1, R1, R2) are local activities: one marker each, made in
# the workflow task that asks for them, instead of an activity task and one more workflow task before the
# write they decide. Writes stay ordinary activities (their intent is in history first). Runs from before
# schedule the reads as activities.
PATCH_READS_LOCAL = "loadbalancer-reads-local"
# R0m: a step that replaced a pool's members, when this pass's R0 found everything else converged, is
# confirmed by the wait's read of the load balancer and that pool's members (one GET once ACTIVE instead of
# R0's six or more); anything but Done on that answer is decided on a full R0. Runs from before read R0.
PATCH_MEMBERS_READ = "loadbalancer-members-step-reads-members"
# R0s: a pass that only a spec change asked for, right after a pass that ended Done, sends a members batch
# that ends the pass (R0m) on the read that Done was decided from, without R0 first: the batch is the
# declared member list of a pool osprov made, by ID, so it needs no fresher read, and Octavia refuses it
# (404, 409) if the pool is gone or the load balancer busy; the pass then starts with R0 as before. A
# resync, a retry, a kick or any other decision reads R0 first. Runs from before read R0 first.
PATCH_MEMBERS_ON_LAST_READ = "loadbalancer-members-on-last-read"
MAX_STEPS_PER_PASS = (
    12  # mutations (each waited out) one pass chains; then the loop's timer, bounding history
)

# The activity of each Octavia mutation a decision can ask for.
MUTATIONS: dict[type[Any], Activity[Any, Any]] = {
    io.CreateLoadBalancer: io.CREATE_LOAD_BALANCER,
    io.CreatePool: io.CREATE_POOL,
    io.UpdatePool: io.UPDATE_POOL,
    io.CreateListener: io.CREATE_LISTENER,
    io.UpdateListener: io.UPDATE_LISTENER,
    io.ReplaceMembers: io.REPLACE_MEMBERS,
    io.CreateMonitor: io.CREATE_MONITOR,
    io.UpdateMonitor: io.UPDATE_MONITOR,
    io.DeleteObject: io.DELETE,
}


FLOATING_IP_CALLS: dict[type[Any], Activity[Any, Any]] = {
    io.CreateFloatingIp: io.CREATE_FLOATING_IP,
    io.DeleteFloatingIp: io.DELETE_FLOATING_IP,
}
# What a plan walk may call (workflows/plan.py): the reads of P1, R1, R2 (and the tenancy check).
PLAN_READS = frozenset(
    c.name
    for c in (
        io.READ_TOPOLOGY,
        io.FIND_LOAD_BALANCER,
        io.LIST_LISTENERS,
        io.LIST_POOLS,
        io.LIST_MONITORS,
        io.FIND_FLOATING_IPS,
        io.LIST_MEMBERS,
    )
)
Reader = Callable[[Activity[Any, Any], Any, str], Awaitable[Any]]


def _call(contract: Activity[Any, Any], arg: Any, what: str) -> Awaitable[Any]:
    return call(contract, arg, summary=what)


def _call_local(contract: Activity[Any, Any], arg: Any, what: str) -> Awaitable[Any]:
    return call_local(contract, arg, summary=what)


def consistency(message: str) -> PassFailed:
    """No safe next action: reported as Errored; the next passes only read until the cloud changes."""
    return PassFailed(message, reason=AvailableReason.ERRORED.value, retry=True)


def _scope(where: Where | None) -> io.Scope:
    assert where is not None  # None only while deleting
    return io.Scope(project=where.project, domain=where.domain, credential=where.credential)


def backoff(waits: int) -> float:
    return float(min(FIRST_WAIT_SECONDS * 2**waits, MAX_WAIT_SECONDS))


def known_topology(obs: Observation) -> io.KnownTopology | None:
    """The IDs a read found, as the next R0's guess (io.KnownTopology): that read then makes its calls at
    once. Only the activity uses it; every decision still rests on the fresh read."""
    lb = obs.found[0] if obs.found is not None and len(obs.found) == 1 else None
    if lb is None or not lb.vip_port_id or obs.tree is None:
        return None
    pools = {p.name: p.id for p in obs.tree.pools}
    return io.KnownTopology(load_balancer_id=lb.id, vip_port_id=lb.vip_port_id, pools=pools)


def _pool_name(obs: Observation | None, pool_id: str) -> str:
    pools = obs.tree.pools if obs is not None and obs.tree is not None else ()
    return next((p.name for p in pools if p.id == pool_id), pool_id)


def _batch_done(d: Decision, obs: Observation | None) -> str:
    """The Event of a members batch R0m confirmed."""
    a = d.action
    assert isinstance(a, io.ReplaceMembers)
    return f"replaced the members of pool {_pool_name(obs, a.pool_id)}: {len(a.members)} member(s)"


@workflow.defn(name="LoadBalancer")
class LoadBalancerWorkflow(CloudEntity[LoadBalancerSpec, LoadBalancerState]):
    KIND = "LoadBalancer"
    STATE = LoadBalancerState
    PLAN_READS = PLAN_READS
    # What the last R0 found (this run only): the next R0's guess, so it reads in one round.
    known: io.KnownTopology | None = None
    # The observation the last step was decided from (R0m folds the members it reads into it).
    decided_from: Observation | None = None
    # What the last pass that ended Done decided it on, in which scope (R0s; this run only, taken by the
    # next pass whatever it decides).
    last_read: tuple[io.Scope, Observation] | None = None

    @workflow.run
    async def run(self, inp: EntityInput) -> str:
        return await self.run_loop(inp)

    def status(self, base: StatusBase) -> LoadBalancerStatus:
        k = self.k
        return LoadBalancerStatus(
            **base, load_balancer_id=k.load_balancer_id, vip_address=k.vip_address, public_ip=k.public_ip
        )

    def observes(self) -> bool:
        return patches.patched(PATCH_OBSERVE)

    # ----- the passes ---------------------------------------------------------------------------------
    async def reconcile(self, spec: LoadBalancerSpec, full: bool) -> Outcome:
        last, self.last_read = self.last_read, None  # R0s: only the next pass may decide on it
        if spec.unmanaged:
            return await self.observe_import(spec)
        uid = self.st.ref.uid
        scope = _scope(await self.where(spec, deleting=False))
        at_once = patches.patched(PATCH_READ_AT_ONCE)

        def decide(obs: Observation) -> Decision:
            return converge(spec, uid, obs, scope, at_once=at_once, namespace=self.st.ref.namespace)

        seed: Observation | None = None  # R0, already read by the last step's wait
        shown = False  # the pass showed "Provisioning" (at its first wait that is not R0m's)
        confirmed: str | None = None  # what the last wait's R0m confirmed (the pass's Event)
        for step in range(MAX_STEPS_PER_PASS):
            sent = await self._members_on_last_read(spec, scope, decide, last) if step == 0 else None
            d = sent or await self._run_pass(decide, seed)
            if isinstance(d.action, Done):
                self.k.waits = 0
                if self.decided_from is not None:
                    self.last_read = scope, self.decided_from
                if confirmed is not None:
                    self.event(note("Updated", confirmed))
                provisioned = ConditionState.of(
                    AVAILABLE, True, AvailableReason.PROVISIONED, d.action.message
                )
                return Outcome(conditions=[provisioned])
            mutated = not isinstance(d.action, Wait)
            if step > 0 and not mutated:
                break  # settled, yet something still waits (a child PENDING): the loop's backoff
            settling = AvailableReason.PROVISIONING, PROVISIONING_MESSAGE
            then = self._r0(decide) if at_once else None
            # R0m: a members batch that ends the pass leaves Available as it was (the load balancer serves
            # throughout the batch); the status is written once, when the batch is confirmed. Only a wait
            # that reads (`then`) can confirm it.
            confirm = self._members_only(spec, d, decide) if then is not None else None
            done, seed = await self._await(
                scope,
                gone=False,
                first=not shown and confirm is None,
                showing=settling,
                then=then,
                confirm=confirm,
            )
            shown = shown or confirm is None
            confirmed = (
                _batch_done(d, self.decided_from) if confirm is not None and seed is not None else None
            )
            if not done:
                break  # still PENDING after a minute (or a run from before the patch): the loop's timer
        return self._requeue(d, mutated, AvailableReason.PROVISIONING, PROVISIONING_MESSAGE)

    async def _members_on_last_read(
        self,
        spec: LoadBalancerSpec,
        scope: io.Scope,
        decide: Callable[[Observation], Decision],
        last: tuple[io.Scope, Observation] | None,
    ) -> Decision | None:
        """R0s: the members batch this pass sends on `last` (the read the last pass ended Done on) without
        R0 first, when only the spec changed and the decisions on that read say the batch ends the pass
        (R0m confirms it). None: the pass starts with R0 (nothing sent, or Octavia refused the batch)."""
        if last is None or last[0] != scope or not self.only_spec_changed:
            return None
        obs, ref = last[1], self.st.ref
        d = decide(obs)
        a = d.action
        if not isinstance(a, io.ReplaceMembers):
            return None
        if not members_end_the_pass(spec, ref.uid, obs, a, namespace=ref.namespace):
            return None
        if not patches.patched(PATCH_MEMBERS_ON_LAST_READ):
            return None
        self.decided_from = obs
        self.set_step(d.step)
        try:
            await call(io.REPLACE_MEMBERS, a, summary=f"{d.step} (R0s: decided on the last pass's read)")
        except ActivityError as err:
            if error_type(err) in (CONFLICT, NOT_FOUND):
                return None  # the pool is gone or the load balancer busy: R0 decides
            raise
        return d

    def _members_only(
        self, spec: LoadBalancerSpec, d: Decision, decide: Callable[[Observation], Decision]
    ) -> tuple[list[str], Callable[[Observation], Decision]] | None:
        """R0m: the pools whose members the wait after `d` reads instead of R0, when `d` replaced members
        and is the pass's last step; with the decisions that must say Done on that answer."""
        a, obs, ref = d.action, self.decided_from, self.st.ref
        if not isinstance(a, io.ReplaceMembers) or obs is None:
            return None
        if not members_end_the_pass(spec, ref.uid, obs, a, namespace=ref.namespace):
            return None
        return ([a.pool_id], decide) if patches.patched(PATCH_MEMBERS_READ) else None

    def _r0(self, decide: Callable[[Observation], Decision]) -> io.ReadTopology | None:
        """The read a pass starts with (R0), to be made at the end of a wait."""
        first = decide(Observation()).action
        return self._guessing(first) if isinstance(first, io.ReadTopology) else None

    def _guessing(self, read: io.ReadTopology) -> io.ReadTopology:
        return read if self.known is None else read.model_copy(update={"known": self.known})

    async def _await(
        self,
        scope: io.Scope,
        *,
        gone: bool,
        first: bool,
        showing: tuple[AvailableReason, str],
        then: io.ReadTopology | None = None,
        confirm: tuple[list[str], Callable[[Observation], Decision]] | None = None,
    ) -> tuple[bool, Observation | None]:
        """Wait in one activity for Octavia to settle the load balancer (or, `gone`, to delete it); True
        when it did, with `then` (R0) read once it had (PATCH_AWAIT_READS), or, `confirm` (R0m), only
        those pools' members: that answer is returned only when its decisions say Done (else None: the
        next step starts with R0). The condition says what is awaited first (once per pass)."""
        lb_id = self.k.load_balancer_id
        if lb_id is None or not patches.patched(PATCH_AWAIT):
            return False, None
        reads = then is not None and not gone and patches.patched(PATCH_AWAIT_READS)
        status: asyncio.Future[None] | None = None
        if first and self.st.desired is not None:
            write = self._publish(self.st.desired, [ConditionState.of(AVAILABLE, False, *showing)])
            if reads:
                status = asyncio.ensure_future(write)  # beside the wait: one round trip fewer
            else:
                await write
        wait = io.AwaitLoadBalancer(
            scope=scope,
            id=lb_id,
            gone=gone,
            within_seconds=AWAIT_WITHIN_SECONDS,
            busy_seen_at=workflow.now(),  # this pass's read or accepted change: Octavia is busy
        )
        what = f"wait for Octavia: load balancer {io.lb_name(self.st.ref.uid)} " + (
            "to be gone" if gone else "to be ACTIVE"
        )
        timeout = timedelta(seconds=AWAIT_WITHIN_SECONDS + 30)
        if reads:
            assert then is not None
            after = "R0: read its tree"
            if confirm is not None:
                after = f"R0m: read the members of pool {_pool_name(self.decided_from, confirm[0][0])}"
            try:
                awaited = await self.until_news(
                    call(
                        io.AWAIT_TOPOLOGY,
                        io.AwaitTopology(wait=wait, read=then, members_of=confirm[0] if confirm else None),
                        summary=f"{what} (a read every 0.2 s), then {after}",
                        timeout=timeout,
                    )
                )
            finally:
                if status is not None:
                    await status
            if awaited is None or awaited.topology is None:
                return False, None  # news cut the wait short, or still PENDING: the loop takes over
            self._note_found(then, awaited.topology.found)
            answer = awaited.topology
            if confirm is not None and answer.listeners is None and answer.members is not None:
                assert self.decided_from is not None  # R0m answered (not R0 instead: a pool was gone)
                seen = fold_members(self.decided_from, answer)
                return True, seen if isinstance(confirm[1](seen).action, Done) else None
            seen = fold_topology(Observation(), awaited.topology)
            self.known = known_topology(seen) or self.known
            return True, seen
        found = await self.until_news(
            call(io.AWAIT_LOAD_BALANCER, wait, summary=f"{what} (a read every 0.2 s)", timeout=timeout)
        )
        if found is None:
            return False, None  # news cut the wait short: the next pass runs at once
        settled = not found if gone else bool(found) and found[0].provisioning_status in ("ACTIVE", "ERROR")
        return settled, None

    async def observe_import(self, spec: LoadBalancerSpec) -> Outcome:
        """O1…O4 then OL1…OL3 (workflows/observe_import.py): one read of the imported load balancer, mirrored;
        never a create, an update, a floating IP or a delete (and the resource is never `realised`)."""
        scope = _scope(await self.where(spec, deleting=False))
        wanted = Wanted.of(spec.import_)
        step = f"O1: find the imported load balancer ({wanted.shown})"
        self.set_step(step)
        query = io.FindImportedLoadBalancer(scope=scope, id=wanted.id, name=wanted.name)
        found = await call(io.FIND_IMPORTED_LOAD_BALANCER, query, summary=step)
        chosen = choose(found, wanted, "Octavia load balancer", f"project {scope.domain}/{scope.project}")
        if isinstance(chosen, Refused):
            self.set_step(f"{chosen.rule}: {chosen.message}")
            raise PassFailed(chosen.message, reason=AvailableReason.ERRORED.value)
        lb = chosen.found
        if self.k.load_balancer_id != lb.id:
            self.event(note("Observed", f"observing Octavia load balancer {lb.id} ({wanted.shown})"))
        self.k.load_balancer_id, self.k.vip_address = lb.id, lb.vip_address
        m = mirror_load_balancer(lb.id, lb.provisioning_status)
        self.set_step(f"{m.rule}: {m.message}")
        conditions = [ConditionState.of(AVAILABLE, m.available, m.reason, m.message)]
        if not m.settling:
            self.k.waits = 0
            return Outcome(conditions=conditions)
        waits = self.k.waits
        self.k.waits = waits + 1
        return Outcome(conditions=conditions, requeue_after=backoff(waits))

    async def finalize(self, spec: LoadBalancerSpec) -> Outcome | None:
        self.last_read = None
        scope = None  # never realised: no create was attempted, nothing can exist (D1), no Identity is asked
        if self.k.realised:
            where = await self.where(spec, deleting=True)
            if where is None:
                self.set_step("its Identity is gone or never got a project: no load balancer can exist")
                self.k.load_balancer_id = self.k.vip_address = self.k.public_ip = None
                return None
            scope = _scope(where)
        if not patches.patched(PATCH_FINALIZE_REQUEUE):
            await self._finalize_in_one_pass(spec, scope)
            return None
        d = await self._run_pass(lambda obs: delete(spec, self.st.ref.uid, self.k.realised, obs, scope))
        if isinstance(d.action, Done):
            self.k.load_balancer_id = self.k.vip_address = self.k.public_ip = None
            return None
        mutated = not isinstance(d.action, Wait)
        going = AvailableReason.DEPROVISIONING, DEPROVISIONING_MESSAGE
        # D3 sent the cascade, D4 found it going: wait for it to be gone (that read is D1's confirmation).
        waitable = d.rule in ("D3", "D4")
        if (
            scope is not None
            and waitable
            and (await self._await(scope, gone=True, first=True, showing=going))[0]
        ):
            self.k.load_balancer_id = self.k.vip_address = self.k.public_ip = None
            return None
        return self._requeue(d, mutated, AvailableReason.DEPROVISIONING, DEPROVISIONING_MESSAGE)

    async def _finalize_in_one_pass(self, spec: LoadBalancerSpec, scope: io.Scope | None) -> None:
        """Runs that started deleting before PATCH_FINALIZE_REQUEUE replay this: the same decisions,
        re-checked on timers inside one pass until the load balancer is gone."""
        waits = 0
        while True:
            d = await self._run_pass(lambda obs: delete(spec, self.st.ref.uid, self.k.realised, obs, scope))
            if isinstance(d.action, Done):
                if self.k.realised:  # gone (a never-realised resource had nothing recorded)
                    self.k.load_balancer_id = self.k.vip_address = self.k.public_ip = None
                return
            if not isinstance(d.action, Wait):
                waits = 0  # the cascade was sent
            await workflow.sleep(backoff(waits), summary=f"re-check: {d.step}; waiting for it to go")
            waits += 1

    def _requeue(self, d: Decision, mutated: bool, reason: AvailableReason, message: str) -> Outcome:
        """Still converging or deleting: a durable timer re-runs the pass (short after our own mutation,
        backing off while Octavia stays PENDING). The detail goes to the step; the status stays put."""
        waits = 0 if mutated else self.k.waits
        self.k.waits = waits + 1
        after = "waiting for it to go" if reason is AvailableReason.DEPROVISIONING else "waiting for ACTIVE"
        self.set_step(f"{d.step}; {after}" if mutated else d.step)
        return Outcome(
            conditions=[ConditionState.of(AVAILABLE, False, reason, message)], requeue_after=backoff(waits)
        )

    # ----- executing decisions ------------------------------------------------------------------------
    async def _run_pass(
        self, decide: Callable[[Observation], Decision], seed: Observation | None = None
    ) -> Decision:
        """Ask, execute, fold in, ask again; returns the decision that ends the pass (its mutation sent).
        `seed`: what the last wait already read (R0). Raises the consistency error a Fail decision carries."""
        obs = seed or Observation()
        while True:
            d = decide(obs)
            self.decided_from = obs
            self.set_step(d.step)
            if d.public_ip is not None:
                self.k.public_ip = d.public_ip.address
            a = d.action
            if isinstance(a, Fail):
                raise consistency(a.message)
            if isinstance(a, Wait | Done):
                return d
            if type(a) in MUTATIONS:
                await self._mutate(d)
                return d
            obs = await self._read_or_float(obs, d)

    async def _mutate(self, d: Decision) -> None:
        a = d.action
        if isinstance(a, io.CreateLoadBalancer):
            self.k.realised = True  # from here on, delete must look in the cloud
            lb = await call(io.CREATE_LOAD_BALANCER, a, summary=d.step)
            self.k.load_balancer_id, self.k.vip_address = lb.id, lb.vip_address
            self.event(note("Created", f"created Octavia load balancer {a.name}"))
            return
        await call(MUTATIONS[type(a)], a, summary=d.step)

    async def _read_or_float(self, obs: Observation, d: Decision) -> Observation:
        """Reads and floating-IP calls: they do not lock the load balancer, so the pass goes on."""
        a = d.action
        if isinstance(a, io.ReadTopology):
            d = replace(d, action=self._guessing(a))
        read = await self._read(obs, d, _call_local if patches.patched(PATCH_READS_LOCAL) else _call)
        if read is not None:
            if read.found is not None:
                self._note_found(a, list(read.found))
            self.known = known_topology(read) or self.known
            return read
        if isinstance(a, io.DeleteFloatingIp):
            await call(io.DELETE_FLOATING_IP, a, summary=d.step)
            return obs.without_floating_ip(a.id)
        assert isinstance(a, io.CreateFloatingIp), a
        return obs.with_floating_ip(await call(io.CREATE_FLOATING_IP, a, summary=d.step))

    def _note_found(self, read: object, found: list[io.LoadBalancerView]) -> None:
        """A lookup that found our one load balancer: it exists, with this ID and VIP."""
        if isinstance(read, io.FindLoadBalancer | io.ReadTopology) and len(found) == 1:
            self.k.realised = True
            self.k.load_balancer_id, self.k.vip_address = found[0].id, found[0].vip_address

    @staticmethod
    async def _read(obs: Observation, d: Decision, read: Reader) -> Observation | None:
        """The reads of a decision, folded into `obs` (None: `d` is not a read). The pass and the plan
        walk share them; `read` makes one call."""
        a = d.action
        if isinstance(a, io.ReadTopology):
            return fold_topology(obs, await read(io.READ_TOPOLOGY, a, d.step))
        if isinstance(a, io.FindLoadBalancer):
            return replace(obs, found=tuple(await read(io.FIND_LOAD_BALANCER, a, d.step)))
        if isinstance(a, ReadTree):
            # R1: four independent reads in parallel (one round trip instead of four on a busy worker).
            lb, c = a.children.prefix.removesuffix("-"), a.children
            listeners, pools, monitors, fips = await asyncio.gather(
                read(io.LIST_LISTENERS, c, f"R1: list the listeners of {lb}"),
                read(io.LIST_POOLS, c, f"R1: list the pools of {lb}"),
                read(io.LIST_MONITORS, c, f"R1: list the health monitors of {lb}"),
                read(
                    io.FIND_FLOATING_IPS,
                    a.floating_ips,
                    f"R1: find the floating IPs on VIP port {a.floating_ips.port_id}",
                ),
            )
            return replace(obs, tree=Tree(tuple(listeners), tuple(pools), tuple(monitors), tuple(fips)))
        if isinstance(a, ReadMembers):
            lists = await asyncio.gather(
                *(
                    read(
                        io.LIST_MEMBERS,
                        io.PoolRef(scope=a.scope, pool_id=p.id),
                        f"R2: list the members of pool {p.name}",
                    )
                    for p in a.pools
                )
            )
            return replace(obs, members={p.id: tuple(m) for p, m in zip(a.pools, lists, strict=True)})
        if isinstance(a, io.FindFloatingIps):
            return replace(obs, tree=Tree(floating_ips=tuple(await read(io.FIND_FLOATING_IPS, a, d.step))))
        return None

    # ----- plan preview (workflows/plan.py) -----------------------------------------------------------
    async def plan(self, spec: LoadBalancerSpec, rec: Recorder) -> str:
        """The converge pass's walk (P1…P8, R1, R2) on fresh reads; the first write ends it."""
        if spec.unmanaged:
            return "managementPolicy unmanaged: the load balancer is only observed, never written"
        scope = _scope(await self.plan_where(spec))
        uid, obs, at_once = self.st.ref.uid, Observation(), patches.patched(PATCH_READ_AT_ONCE)
        while True:
            d = converge(spec, uid, obs, scope, at_once=at_once, namespace=self.st.ref.namespace)
            a = d.action
            if isinstance(a, Fail):
                raise PlanStopped(f"{d.step}: {a.message}")
            if isinstance(a, Done):
                return f"{d.rule}: converged, nothing to call ({a.message})"
            if isinstance(a, Wait):
                return f"{d.step}: Octavia is busy; the workflow waits for it, then decides again"
            contract = MUTATIONS.get(type(a)) or FLOATING_IP_CALLS.get(type(a))
            if contract is not None:
                rec.write(d.rule, contract, d.what, a)
                return AFTER_WRITE
            read = await self._read(obs, d, lambda c, arg, what: rec.read(c, arg, what))
            assert read is not None, a
            obs = read
