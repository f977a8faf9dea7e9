"""Plan preview: the calls a spec would make now, computed by the kind's own decision functions against a
fresh read, with every write recorded instead of sent (api/plan.py).

The Update `plan` (osprov plan) and the annotation osprov.osh.openstack.org/plan (an Event `Planned`) run
`Planner.plan`. A kind supplies `plan(spec, rec)`: it runs the same decide → read → fold loop as its passes,
but hands each decision to `rec`: reads are made (activities that only read), and the first write ends the
walk — what follows a write depends on the cloud's answer to it, so the plan says so instead of guessing.
A plan changes no workflow state and calls nothing that writes: the walk only reaches activities through
`Recorder.read`, which refuses any contract not marked read-only by the kind.
"""

from __future__ import annotations

from typing import Any, Protocol, TypeVar, cast

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from pydantic import BaseModel, ValidationError

    from osprov.api.activity import Activity
    from osprov.api.common import CommonSpec
    from osprov.api.messages import EntityState
    from osprov.api.plan import Plan, PlannedCall, request_of
    from osprov.api.registry import KindInfo
    from osprov.workflows.calls import call, call_local

Arg = TypeVar("Arg", bound=BaseModel)
Result = TypeVar("Result")

NOT_AVAILABLE = "plan preview is not available for this kind yet: nothing was read"
AFTER_WRITE = "the walk stops at the first write: what follows depends on the cloud's answer to it"


class Recorder:
    """What a kind's plan walk read and would write."""

    def __init__(self, reads_allowed: frozenset[str]) -> None:
        self.reads: list[str] = []
        self.calls: list[PlannedCall] = []
        self._allowed = reads_allowed

    async def read(
        self, contract: Activity[Arg, Result], arg: Arg, what: str, *, local: bool = False
    ) -> Result:
        """Make one read (`local`: as a local activity, as the kind's pass makes it)."""
        if contract.name not in self._allowed:  # a plan never writes, by construction
            raise AssertionError(f"{contract.name} is not a read")
        self.reads.append(what)
        if local:
            return await call_local(contract, arg, summary=f"plan: {what}")
        return await call(contract, arg, summary=f"plan: {what}")

    def write(self, rule: str, contract: Activity[Any, Any], what: str, action: object) -> None:
        """Record the write a decision asks for (`action`: the call's request model)."""
        assert isinstance(action, BaseModel), action
        self.calls.append(
            PlannedCall(rule=rule, activity=contract.name, what=what, request=request_of(action))
        )


class Planned(Protocol):
    """What the planner uses of a kind's workflow (workflows/entity.py)."""

    @property
    def st(self) -> EntityState[Any]: ...
    @property
    def info(self) -> KindInfo: ...
    async def plan(self, spec: Any, rec: Recorder) -> str: ...


class Planner:
    def __init__(self, entity: Planned, reads: frozenset[str] = frozenset()) -> None:
        self.e = entity
        self.reads = reads

    async def plan(self, raw: dict[str, Any] | None) -> Plan:
        ref = self.e.st.ref
        rec = Recorder(self.reads)
        plan = Plan(kind=ref.kind, namespace=ref.namespace, name=ref.name, then="")
        if raw is None:
            desired = self.e.st.desired
            raw = desired.spec if desired is not None else {}
        try:
            spec = cast(CommonSpec, self.e.info.spec_model.model_validate(raw))
        except ValidationError as err:
            problems = "; ".join(f"spec.{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in err.errors())
            plan.then = f"invalid spec, nothing would be called: {problems}"
            return plan
        try:
            plan.then = await self.e.plan(spec, rec)
        except PlanStopped as stop:
            plan.then = stop.message
        plan.reads, plan.calls = rec.reads, rec.calls
        return plan


class PlanStopped(Exception):
    """The walk cannot go on (e.g. the project is not allowed, a duplicate): the message says why."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
