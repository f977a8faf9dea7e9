"""SecurityGroup: a Neutron security group named secgroup-{uid} and exactly its spec's rules, in its
Identity's project (or an allowed spec.project).

The decisions are pure functions in workflows/security_group_decisions.py (G…, R…, D…; docs/security-group.md);
this module executes them, one call per step, folding each answer into the pass's observation before it asks
again. Every pass starts with the tenancy step (workflows/tenancy.py) and a fresh read by the deterministic
name, so a crash at any point leaves nothing a later pass would duplicate: the group is adopted, a rule Neutron
already holds is not created again (a 409 adopts it), and the group is never recreated to change its rules.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from osprov.api import security_group_io as io
    from osprov.api.common import AvailableReason
    from osprov.api.messages import ConditionState, EntityInput
    from osprov.api.registry import AVAILABLE
    from osprov.api.security_group import SecurityGroupSpec, SecurityGroupStatus
    from osprov.api.state import SecurityGroupState
    from osprov.workflows.calls import call
    from osprov.workflows.entity import Outcome, PassFailed, StatusBase
    from osprov.workflows.event_recorder import note
    from osprov.workflows.plan import AFTER_WRITE, PlanStopped, Recorder
    from osprov.workflows.security_group_decisions import (
        Converged,
        Decision,
        Done,
        Fail,
        Observation,
        Target,
        Wait,
        converge,
        delete,
        deleted,
        found,
        observe_import,
        rule_added,
        rule_removed,
    )
    from osprov.workflows.tenancy import CloudEntity, Where

# D5: re-checks of a group ports still use, short first (a server being deleted lets go within seconds),
# doubling up to the cap, so an operator who removes it from a port sees deletion go on soon.
WAIT_FIRST_SECONDS = 2.0
WAIT_MAX_SECONDS = 60.0


def wait_delay(waits: int) -> float:
    """Seconds before the next re-check after `waits` re-checks that found the group still in use."""
    return float(min(WAIT_FIRST_SECONDS * 2**waits, WAIT_MAX_SECONDS))


def _available(ok: bool, reason: AvailableReason, message: str) -> ConditionState:
    return ConditionState.of(AVAILABLE, ok, reason, message)


@workflow.defn(name="SecurityGroup")
class SecurityGroupWorkflow(CloudEntity[SecurityGroupSpec, SecurityGroupState]):
    KIND = "SecurityGroup"
    STATE = SecurityGroupState
    OBSERVES = True  # managementPolicy unmanaged + import: O1…O4, OG1 (a new kind: no run ever refused it)
    PLAN_READS = frozenset({io.FIND_GROUP.name, io.RESOLVE_GROUPS.name})

    @workflow.run
    async def run(self, inp: EntityInput) -> str:
        return await self.run_loop(inp)

    def target(self, where: Where) -> Target:
        ref = self.st.ref
        scope = io.Scope(project=where.project, domain=where.domain, credential=where.credential)
        return Target(name=io.security_group_name(ref.uid), namespace=ref.namespace, scope=scope)

    def status(self, base: StatusBase) -> SecurityGroupStatus:
        return SecurityGroupStatus(
            **base, security_group_id=self.k.security_group_id, rule_count=self.k.rule_count
        )

    def failure_condition(self, reason: str, message: str) -> ConditionState:
        # Every failure is reported with one of the Available reasons (the loop's ReconcileError included).
        known = {r.value for r in AvailableReason}
        if reason not in known:
            deleting = self.st.desired is not None and (self.st.desired.deleting or self.st.desired.gone)
            reason = (AvailableReason.DEPROVISIONING if deleting else AvailableReason.PROVISIONING).value
        return ConditionState.of(AVAILABLE, False, reason, message)

    # ----- executing decisions ------------------------------------------------------------------------
    async def _run_pass(self, decide: Callable[[Observation], Decision]) -> Decision:
        """Ask, call, fold in, ask again; returns the decision that ends the pass (Fail raises)."""
        obs = Observation()
        while True:
            d = decide(obs)
            self.set_step(d.step)
            a = d.action
            if isinstance(a, Fail):
                if a.log:  # operator log only: Neutron's IDs never reach the status
                    workflow.logger.warning(a.log, extra={"security_group_ids": [g.id for g in a.groups]})
                raise PassFailed(a.message, reason=a.reason.value)
            if isinstance(a, io.FindGroup):
                obs = found(obs, await call(io.FIND_GROUP, a, summary=d.step))
            elif isinstance(a, io.CreateGroup):
                made = await call(io.CREATE_GROUP, a, summary=d.step)
                self.event(note("Created", f"created Neutron security group {a.name}"))
                obs = replace(obs, group=made)
            elif isinstance(a, io.UpdateGroup):
                updated = await call(io.UPDATE_GROUP, a, summary=d.step)
                obs = replace(obs, group=updated, updated=True)
                self.event(note("Updated", d.what))
            elif isinstance(a, io.ResolveGroups):
                resolved = await call(io.RESOLVE_GROUPS, a, summary=d.step)
                obs = replace(obs, resolved=resolved)
            elif isinstance(a, io.CreateRule):
                obs = rule_added(obs, await call(io.CREATE_RULE, a, summary=d.step))
                self.event(note("RuleAdded", d.what))
            elif isinstance(a, io.DeleteRule):
                await call(io.DELETE_RULE, a, summary=d.step)
                obs = rule_removed(obs, a.rule_id)
                self.event(note("RuleRemoved", d.what))
            elif isinstance(a, io.DeleteGroup):
                obs = deleted(await call(io.DELETE_GROUP, a, summary=d.step))
            else:
                return d

    # ----- converge -------------------------------------------------------------------------------
    async def reconcile(self, spec: SecurityGroupSpec, full: bool) -> Outcome:
        where = await self.where(spec, deleting=False)
        assert where is not None
        target = self.target(where)
        if spec.unmanaged:  # O1…O4, OG1: only read; the status mirrors the imported group
            d = await self._run_pass(lambda obs: observe_import(spec, target, obs))
        else:
            d = await self._run_pass(lambda obs: converge(spec, target, obs))
        assert isinstance(d.action, Converged) and d.observed is not None  # R3, OG1
        self.k.security_group_id, self.k.rule_count = d.observed.id, len(d.observed.rules)
        self.k.waits = 0
        return Outcome(conditions=[_available(True, AvailableReason.PROVISIONED, d.action.message)])

    # ----- plan preview (workflows/plan.py) ---------------------------------------------------------
    async def plan(self, spec: SecurityGroupSpec, rec: Recorder) -> str:
        """The converge pass's walk on fresh reads. Rule calls and the description update do not depend on
        Neutron's answer, so the walk folds each in as if made and goes on: the plan lists every rule change;
        a group create (G3) ends it (the rules then depend on the new group)."""
        if spec.unmanaged:
            return "managementPolicy unmanaged: the security group is only observed, never written"
        target, obs, planned = self.target(await self.plan_where(spec)), Observation(), 0
        while True:
            d = converge(spec, target, obs)
            a = d.action
            if isinstance(a, Fail):
                raise PlanStopped(f"{d.step} ({a.message})")
            if isinstance(a, io.FindGroup):
                obs = found(obs, await rec.read(io.FIND_GROUP, a, d.step))
            elif isinstance(a, io.ResolveGroups):
                resolved = await rec.read(io.RESOLVE_GROUPS, a, d.step)
                obs = replace(obs, resolved=resolved)
            elif isinstance(a, io.CreateGroup):
                rec.write(d.rule, io.CREATE_GROUP, d.what, a)
                return AFTER_WRITE
            elif isinstance(a, io.UpdateGroup):
                rec.write(d.rule, io.UPDATE_GROUP, d.what, a)
                obs = replace(obs, updated=True)
            elif isinstance(a, io.CreateRule):
                rec.write(d.rule, io.CREATE_RULE, d.what, a)
                planned += 1
                obs = rule_added(obs, io.Rule(id=f"planned-{planned}", key=a.key))
            elif isinstance(a, io.DeleteRule):
                rec.write(d.rule, io.DELETE_RULE, d.what, a)
                obs = rule_removed(obs, a.rule_id)
            else:  # R3: what the group is (or would be, after the calls above)
                return f"{d.step}" if not rec.calls else f"then {d.step}"

    # ----- delete --------------------------------------------------------------------------------
    async def finalize(self, spec: SecurityGroupSpec) -> Outcome | None:
        where = await self.where(spec, deleting=True)
        if where is None:  # its Identity is gone or never got a project: no group can exist
            return None
        target = self.target(where)
        d = await self._run_pass(lambda obs: delete(target, obs))
        if isinstance(d.action, Done):  # D1, D2
            return None
        assert isinstance(d.action, Wait)  # D5 (or D4 still listed)
        waits = self.k.waits
        self.k.waits = waits + 1
        return Outcome(
            conditions=[_available(False, AvailableReason.DEPROVISIONING, d.action.message)],
            requeue_after=wait_delay(waits),
        )
