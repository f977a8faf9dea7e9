"""The entity loop, written once: one long-lived workflow per custom resource.

Signals are recorded by sync handlers and merged here; a pass observes and acts through activities;
status is written back through the /status subresource only when it changed (workflows/status.py);
failures retry on durable timers (retryInterval or backoff); a periodic forced resync repairs drift made
outside; continue-as-new carries the state. A kind subclasses `Entity[SpecT, KindT]`: SpecT is its api spec
model, KindT its own pydantic state model (IDs, markers, counters); it supplies `reconcile`, `status` and,
for deletionPolicy=delete, `finalize`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from datetime import timedelta
from typing import Any, ClassVar, Generic, TypedDict, TypeVar, cast

from temporalio import workflow
from temporalio.common import SearchAttributeUpdate
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from pydantic import BaseModel, ValidationError

    from osprov.api import kube_io, registry
    from osprov.api import search_attributes as sa
    from osprov.api.activity import Activity
    from osprov.api.common import AvailableReason, CommonSpec, Condition, StatusModel, serves
    from osprov.api.kube_io import FinalizerChange, ObjectRef, PatchStatus, WriteResult
    from osprov.api.messages import (
        QUERY_STATE,
        SIGNAL_RESOURCE_CHANGED,
        SIGNAL_SECRET_CHANGED,
        ConditionState,
        EntityInput,
        EntityState,
        ResourceChange,
        SecretChanged,
    )
    from osprov.api.metrics import RECONCILES
    from osprov.api.operations import PLAN, UPDATE_APPROVE, EventNote
    from osprov.api.plan import UPDATE_PLAN, Plan
    from osprov.workflows import patches
    from osprov.workflows.approval import Gate
    from osprov.workflows.calls import call, call_local
    from osprov.workflows.event_recorder import note
    from osprov.workflows.operations import Ops
    from osprov.workflows.plan import NOT_AVAILABLE, Planner, Recorder
    from osprov.workflows.status import api_conditions, merge_conditions, status_patch

PATCH_LOCAL_KUBE_WRITES = "kube-writes-local"  # status/finalizer writes became local activities
KubeWrite = TypeVar("KubeWrite", PatchStatus, FinalizerChange)

# How an activity's failure reaches a workflow: an ActivityError wrapping the typed ApplicationError, or,
# for a local activity, the ApplicationError itself.
ACTIVITY_FAILED = (ActivityError, ApplicationError)

DELETING = note("Deleting", "deleting the OpenStack object (deletionPolicy delete)", action="Delete")
DELETED = note("Deleted", "the OpenStack object is gone; removing the finalizer", action="Delete")

SpecT = TypeVar("SpecT", bound=CommonSpec)
T = TypeVar("T")
KindT = TypeVar("KindT", bound=BaseModel)


class PassFailed(Exception):
    """A pass that cannot finish: the message says what to fix (it goes to the condition). `retry_in`: when
    the next pass is due, instead of the backoff (a pass that waits for news which wakes the loop itself)."""

    def __init__(
        self,
        message: str,
        *,
        reason: str = "ReconcileError",
        retry: bool = True,
        retry_in: timedelta | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.reason = reason
        self.retry = retry
        self.retry_in = retry_in


class StatusBase(TypedDict):
    """What every kind's status has; a kind's `status` adds its own fields to these."""

    observed_generation: int
    conditions: list[Condition]


class Outcome(BaseModel):
    """What a successful (or still-waiting) pass decided."""

    conditions: list[ConditionState]
    requeue_after: float | None = None  # seconds: waiting on the cloud (durable timer)
    # An approval gate holds a step (workflows/approval.py): the desired state is not applied yet, so the
    # approval's arrival (an annotation, a kick) runs a full pass; no timer.
    awaiting_approval: bool = False


def failure_message(err: BaseException) -> str:
    """User-safe text of an activity failure: the typed ApplicationError's message."""
    cause: BaseException | None = err
    while isinstance(cause, ActivityError) and cause.cause is not None:
        cause = cause.cause
    if isinstance(cause, ApplicationError):
        return cause.message
    return str(cause)


def error_type(err: BaseException) -> str | None:
    cause = err.cause if isinstance(err, ActivityError) else err
    return cause.type if isinstance(cause, ApplicationError) else None


class Entity(Generic[SpecT, KindT]):
    """Base of every kind's workflow. Subclasses are `@workflow.defn` with a `@workflow.run`."""

    KIND: ClassVar[str]
    STATE: ClassVar[type[BaseModel]]  # the kind's state model (KindT)
    # Whether the kind serves managementPolicy unmanaged (observe only); the others refuse it, calling nothing.
    # Every kind with the field observes now; the refusal stays for runs that started before a kind's
    # observe patch (volume-observe, server-observe, loadbalancer-observe), which replay it.
    OBSERVES: ClassVar[bool] = False
    # The activities a plan walk may call (workflows/plan.py): the kind's reads, nothing else.
    PLAN_READS: ClassVar[frozenset[str]] = frozenset()

    def __init__(self) -> None:
        self.s: EntityState[KindT] | None = None
        self._early_secrets: dict[str, str] = {}
        self._wake = False
        self._kick = False
        self.kicked = False  # this pass runs only because `kick` asked for it (nothing else is due)
        # This pass was asked for by `kick` alone, no retry, resync or operator request being due; unlike
        # `kicked`, also when the desired state is not applied yet (its last pass failed, e.g. waiting on a
        # dependency). `pass_fingerprint` is the desired state's fingerprint this pass works on.
        self.kick_only = False
        # This pass runs only because the desired state changed: no retry, resync, kick or operator request
        # is due (a kind may then decide on what its last converged pass read: LoadBalancer R0s).
        self.only_spec_changed = False
        self.pass_fingerprint = ""
        self._run_passes = 0
        self.ops = Ops(self)  # pause, reconcile-now, resync period, Events (workflows/operations.py)
        self.gate = Gate(self)  # approval of destructive steps (workflows/approval.py)
        self.planner = Planner(self, self.PLAN_READS)  # osprov plan (workflows/plan.py)

    # ----- messages: sync handlers only record; the loop decides ---------------------------------
    @workflow.signal(name=SIGNAL_RESOURCE_CHANGED)
    def resource_changed(self, change: ResourceChange) -> None:
        if self.s is None:  # signal-with-start delivers the signal before run() starts
            self.s = EntityState(ref=change.ref)
        if change.supersedes(self.s.desired):
            self.s.desired = change
            self._wake = True

    @workflow.signal(name=SIGNAL_SECRET_CHANGED)
    def secret_changed(self, change: SecretChanged) -> None:
        key = f"{change.namespace}/{change.name}"
        versions = self.s.secret_versions if self.s is not None else self._early_secrets
        if versions.get(key) != change.resource_version:
            versions[key] = change.resource_version
            self._wake = True

    @workflow.update(name=UPDATE_APPROVE)
    def approve(self, token: str) -> str:
        """`osprov approve`: approve the pending change named by `token` (the validator refused others)."""
        answer = self.gate.approve(token)
        self.kick()
        return answer

    @approve.validator
    def _approve_pending_only(self, token: str) -> None:
        if self.s is None:
            raise ApplicationError("the workflow has not started yet", non_retryable=True)
        self.gate.validate(token)

    @workflow.update(name=UPDATE_PLAN)
    async def plan_update(self, spec: dict[str, Any] | None) -> Plan:
        """`osprov plan`: the calls `spec` (None: the current one) would make now; nothing is written."""
        return await self.planner.plan(spec)

    @plan_update.validator
    def _plan_started_only(self, spec: dict[str, Any] | None) -> None:
        if self.s is None or self.s.desired is None:
            raise ApplicationError("the workflow has not started yet", non_retryable=True)

    @workflow.query(name=QUERY_STATE)
    def state(self) -> EntityState[KindT] | None:
        return self.s

    # ----- kind hooks ---------------------------------------------------------------------------
    async def reconcile(self, spec: SpecT, full: bool) -> Outcome:
        raise NotImplementedError

    async def finalize(self, spec: SpecT) -> Outcome | None:
        """Delete the cloud object (deletionPolicy=delete only). None: it is gone. An Outcome with
        requeue_after: still going; its conditions are published and the loop re-runs finalize on a
        durable timer, so a slow delete is one short pass per check and continue-as-new bounds the run."""
        return None

    async def plan(self, spec: SpecT, rec: Recorder) -> str:
        """Walk the kind's decisions for `spec` with `rec` (reads made, writes recorded); returns what
        follows the recorded calls. Kinds without a walk say so."""
        return NOT_AVAILABLE

    async def on_hold(self) -> None:
        """The resource is paused: tell whoever acts for it on its own (no cloud call)."""

    async def on_deleted(self, spec: SpecT) -> None:
        """The resource is gone (either deletion policy): let go of what it holds."""

    def deletion_in_words(self) -> str:
        """The deletion an approval gate holds, in words (user-safe)."""
        r = self.st.ref
        return f"deleting the OpenStack object of {self.KIND} {r.namespace}/{r.name} (deletionPolicy delete)"

    def observes(self) -> bool:
        """Whether this run serves managementPolicy unmanaged (OBSERVES; a kind that gained it later
        answers through workflow.patched, so runs that refused it keep refusing on replay)."""
        return self.OBSERVES

    def event(self, note: EventNote) -> None:
        """Report what this pass did (Created, Updated, …): recorded as an Event with the status."""
        self.ops.notes.append(note)

    async def until_news(self, wait: Awaitable[T]) -> T | None:
        """Run a long wait on the cloud (an activity) unless news arrives first — a changed spec, a
        deletion, an annotation, a Secret, an answer (`_news_mark`): then the wait is cancelled, None is
        returned, and the loop runs the next pass at once. A wait never holds a resource deaf to its own
        changes."""
        task = asyncio.ensure_future(wait)
        before = self._news_mark()
        await workflow.wait_condition(lambda: task.done() or self._news_mark() != before)
        if task.done():
            return task.result()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, *ACTIVITY_FAILED):
            await task
        return None

    def _news_mark(self) -> tuple[Any, ...]:
        """What counts as news for a wait: the generation, deletion, the annotations, the Secrets' versions
        and a kick — not the echo of our own finalizer write, which changes only the finalizers."""
        d = self.st.desired
        change = (d.generation, d.deleting, d.gone, sorted(d.annotations.items())) if d else None
        return change, sorted(self.st.secret_versions.items()), self._kick

    def kick(self) -> None:
        """Ask the loop for a pass now (a message brought news the status should show)."""
        self._kick = True
        self._wake = True

    def status(self, base: StatusBase) -> StatusModel:
        """The kind's api status model: `base` (observedGeneration, conditions) and the kind's own fields."""
        return self.info.status_model(**base)

    def fingerprint(self, change: ResourceChange) -> str:
        """Desired state identity: generation plus the versions of the Secrets the spec names."""
        secrets = ",".join(f"{k}={v}" for k, v in sorted(self.st.secret_versions.items()))
        return f"{change.generation}|{secrets}"

    def wants_finalizer(self, spec: SpecT) -> bool:
        return spec.deletion_policy == "delete" and not spec.unmanaged

    def resyncs_when_converged(self) -> bool:
        """Whether a converged resource is looked at again on its own resync timer (drift repair). The
        Keystone kinds answer False: the sweep finds drift for them (workflows/keystone/sweep.py)."""
        return True

    def retry_interval(self, spec: SpecT) -> timedelta | None:
        return spec.retry_interval_delta()

    def failure_condition(self, reason: str, message: str) -> ConditionState:
        return ConditionState.of(self.info.ready_condition, False, reason, message)

    def search_attributes(self) -> list[SearchAttributeUpdate[Any]]:
        """Kind-specific search attributes (upserted with the common ones, only when they change)."""
        return []

    # ----- state ----------------------------------------------------------------------------------
    @property
    def st(self) -> EntityState[KindT]:
        assert self.s is not None
        return self.s

    @property
    def k(self) -> KindT:
        """The kind's own typed state."""
        return cast(KindT, self.st.kind)

    @property
    def info(self) -> registry.KindInfo:
        return registry.kind_info(self.KIND)

    @property
    def finalizer(self) -> str:
        return f"{self.info.group}/finalizer"

    @property
    def obj(self) -> ObjectRef:
        r = self.st.ref
        return ObjectRef(
            group=self.info.group,
            version=self.info.version,
            plural=self.info.plural,
            namespace=r.namespace,
            name=r.name,
            uid=r.uid,
        )

    def set_step(self, step: str) -> None:
        """Current step: the query answer and the Web UI's current details."""
        self.st.step = step
        workflow.set_current_details(f"{self.st.ref}: {step}")

    # ----- the loop -----------------------------------------------------------------------------
    async def run_loop(self, inp: EntityInput) -> str:
        patches.begin_run(inp.generation)
        carried: EntityState[Any] = inp.carried or EntityState(ref=inp.ref, config=inp.config)
        if self.s is not None and self.s.desired is not None and self.s.desired.supersedes(carried.desired):
            carried.desired = self.s.desired
        if self.s is not None:
            carried.secret_versions.update(self.s.secret_versions)
        carried.secret_versions.update(self._early_secrets)
        carried.config = inp.config
        carried.kind = self.STATE.model_validate(carried.kind or {})  # a dict when carried or legacy
        self.s = carried
        self._wake = True
        while True:
            if (
                workflow.info().is_continue_as_new_suggested()
                or self._run_passes >= self.st.config.max_passes_per_run
            ):
                await workflow.wait_condition(workflow.all_handlers_finished)
                workflow.continue_as_new(
                    EntityInput(
                        ref=self.st.ref, config=self.st.config, carried=self.st, generation=patches.known()
                    )
                )
            await self._wait_for_work()
            done = await self._pass()
            if done is not None:
                await workflow.wait_condition(workflow.all_handlers_finished)
                return done

    async def _wait_for_work(self) -> None:
        due = [t for t in (self.st.retry_at, self.st.resync_at) if t is not None]
        timeout = max((min(due) - workflow.now()).total_seconds(), 0.0) if due else None
        if self._wake or (timeout is not None and timeout <= 0):
            return
        if self.st.last_error is None and self.st.retry_at is None:
            self.set_step("idle: waiting for a change or the resync")  # else keep what it waits on
        with contextlib.suppress(TimeoutError):  # a timer fired: the pass sees which one
            await workflow.wait_condition(
                lambda: self._wake, timeout=timeout, timeout_summary=self._waiting_for()
            )

    def _waiting_for(self) -> str:
        """The Web UI's label of the loop's timer: what it waits for."""
        if self.st.retry_at is not None and (
            self.st.resync_at is None or self.st.retry_at <= self.st.resync_at
        ):
            return (
                f"re-check: {self.st.step}"
                if self.st.last_error is None
                else f"retry after: {self.st.last_error}"
            )
        return "periodic resync (drift repair)"

    def _timers_due(self) -> tuple[bool, bool]:
        now = workflow.now()
        retry = self.st.retry_at is not None and self.st.retry_at <= now
        resync = self.st.resync_at is not None and self.st.resync_at <= now
        return retry, resync

    async def _pass(self) -> str | None:
        """One decision: returns a final result when the workflow should end."""
        self._wake = False
        change = self.st.desired
        if change is None:
            return None
        retry_due, resync_due = self._timers_due()
        if resync_due:
            # Consumed now, whatever the pass's outcome: an overdue resync must not re-fire on every
            # loop while the resource keeps failing (the retry timer paces those passes).
            self.st.resync_at = workflow.now() + timedelta(seconds=self.ops.resync_seconds())
        self.st.passes += 1
        self._run_passes += 1
        spec = await self._parse(change)
        if spec is None:
            return "deleted (invalid spec; nothing to clean up)" if change.deleting or change.gone else None
        if not serves(spec.keystone_ref_name(), self.st.config.keystone_name):
            # Another deployment's resource: no status, no cloud call; only our own finalizer goes.
            await self._drop_finalizer(change)
            return "ignored: belongs to another deployment"
        self.ops.observe(spec)
        await self._plan_if_asked(change)
        if self.ops.paused(change) and not change.gone:
            await self.on_hold()
            await self.ops.hold(change)  # no call at all; the annotation's removal resumes
            return None
        resumed = self.ops.resumed()
        if change.deleting or change.gone:
            return await self._delete(change, spec)
        try:
            if not await self._sync_finalizer(change, spec):
                return None
        except ACTIVITY_FAILED as err:  # e.g. the API refused the finalizer: reported and retried
            await self._failed(change, spec, err)
            return None
        fp = self.fingerprint(change)
        changed = fp != self.st.applied_fingerprint
        kicked, self._kick = self._kick, False
        # Resuming from a pause or a reconcile-requested-at annotation: one full pass now.
        forced = resumed or self.ops.requested(change)
        self.kicked = kicked and not (changed or retry_due or resync_due or forced)
        self.kick_only = kicked and not (retry_due or resync_due or forced)
        self.only_spec_changed = changed and not (kicked or retry_due or resync_due or forced)
        self.pass_fingerprint = fp
        if not (changed or retry_due or resync_due or kicked or forced):
            return None  # the desired-state fingerprint says nothing would change
        await self._reconcile(change, spec, fp, full=changed or resync_due or forced)
        return None

    async def _plan_if_asked(self, change: ResourceChange) -> None:
        """The plan annotation has a new value: record the current spec's plan as an Event."""
        value = change.annotations.get(PLAN)
        if value is None or value == self.st.ops.plan_handled or change.deleting or change.gone:
            return
        self.st.ops.plan_handled = value
        plan = await self.planner.plan(change.spec)
        await self.ops.announce(note("Planned", plan.render()))

    async def _parse(self, change: ResourceChange) -> SpecT | None:
        """The spec as the kind's model; an invalid one is reported (or, when deleting, its finalizer dropped)."""
        try:
            return cast(SpecT, self.info.spec_model.model_validate(change.spec))
        except ValidationError as err:
            if change.deleting or change.gone:
                await self._drop_finalizer(change)
            else:
                await self._settle_invalid(change, err)
            return None

    async def _sync_finalizer(self, change: ResourceChange, spec: SpecT) -> bool:
        """Our finalizer is present exactly when deletionPolicy=delete (added before the first cloud write)."""
        if self.wants_finalizer(spec) and self.finalizer not in change.finalizers:
            self.set_step("adding finalizer")
            return await self._finalizer(kube_io.ADD_FINALIZER, change)
        if not self.wants_finalizer(spec) and self.finalizer in change.finalizers:
            await self._drop_finalizer(change)
        return True

    async def _reconcile(self, change: ResourceChange, spec: SpecT, fp: str, *, full: bool) -> None:
        self.set_step("reconciling")
        try:
            # full=True: the desired state changed or the periodic resync is due, so the kind runs
            # its expensive checks too (e.g. the password probe); a plain retry does not.
            if spec.unmanaged and not self.observes():
                raise PassFailed(
                    f"managementPolicy unmanaged (observe an existing object) is not supported for "
                    f"{self.KIND} yet: osprov would not touch the object; use managementPolicy managed "
                    "without import, or a new resource",
                    reason=AvailableReason.ERRORED.value,  # only the cloud kinds (Available) refuse it
                    retry=False,
                )
            outcome = await self.reconcile(spec, full=full)
        except (*ACTIVITY_FAILED, PassFailed) as err:
            await self._failed(change, spec, err)
            return
        self._count("waiting" if outcome.requeue_after is not None else "ok", outcome.conditions[0].reason)
        self.st.last_error = None
        self.st.failures = 0
        if outcome.requeue_after is not None:
            self.st.retry_at = workflow.now() + timedelta(seconds=outcome.requeue_after)
        elif outcome.awaiting_approval:
            self.st.retry_at = None  # the approval (or any change) wakes the loop
        else:
            self.st.applied_fingerprint = fp
            self.st.retry_at = None
            self.st.resync_at = (
                workflow.now() + timedelta(seconds=self.ops.resync_seconds())
                if self.resyncs_when_converged()
                else None
            )
            self.set_step("converged")
        await self._publish(change, outcome.conditions)

    async def _failed(self, change: ResourceChange, spec: SpecT, err: BaseException) -> None:
        retry_in = None
        if isinstance(err, PassFailed):
            message, reason, retry, retry_in = err.message, err.reason, err.retry, err.retry_in
        else:
            message, reason, retry = failure_message(err), "ReconcileError", True
        self._count("error", reason)
        self.st.last_error = message
        self.st.failures += 1
        if self.st.resync_at is None:  # even a resource that never converged is looked at again
            self.st.resync_at = workflow.now() + timedelta(seconds=self.ops.resync_seconds())
        if retry:
            base = self.retry_interval(spec)
            backoff = min(
                self.st.config.backoff_initial_seconds * 2 ** (self.st.failures - 1),
                self.st.config.backoff_max_seconds,
            )
            if retry_in is not None:
                delay = retry_in.total_seconds()
            else:
                delay = base.total_seconds() if base else backoff
            self.st.retry_at = workflow.now() + timedelta(seconds=delay)
            self.set_step(f"failed, retrying at {self.st.retry_at:%H:%M:%S}: {message}")
        else:
            self.st.retry_at = None
            self.set_step(f"failed, waiting for a change: {message}")
        workflow.logger.warning("reconcile failed", extra={"reason": reason, "error": message})
        await self._publish(change, [self.failure_condition(reason, message)])

    def _count(self, result: str, reason: str) -> None:
        """osprov_reconciles{kind, result, reason} (workflow meter: not emitted again on replay)."""
        workflow.metric_meter().create_counter(RECONCILES, "entity loop passes").add(
            1, {"kind": self.KIND, "result": result, "reason": reason}
        )

    async def _settle_invalid(self, change: ResourceChange, err: ValidationError) -> None:
        problems = "; ".join(
            f"spec.{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in err.errors(include_url=False)
        )
        self._count("invalid", "ReconcileError")
        self.st.last_error = f"invalid spec: {problems}"
        self.st.retry_at = None  # nothing changes until the resource does
        self.set_step(f"waiting for a fixed spec: {problems}")
        await self._publish(change, [self.failure_condition("ReconcileError", self.st.last_error)])

    async def _delete(self, change: ResourceChange, spec: SpecT) -> str | None:
        if self.wants_finalizer(spec) and (self.finalizer in change.finalizers or change.gone):
            if not self.gate.passes(spec, "delete", self.deletion_in_words()):
                if change.gone:
                    # Someone removed our finalizer by force before the deletion was approved: nothing
                    # unapproved is deleted, so the cloud object stays (as with deletionPolicy retain).
                    workflow.logger.warning("resource gone before its deletion was approved: object kept")
                    return await self._deleted(change, spec)
                # Held: the finalizer keeps the resource (and the cloud object) until approved.
                self.st.retry_at = None
                await self._publish(change, [self.gate.waiting()])
                return None
            self.set_step("deleting the cloud object")
            await self.ops.announce(DELETING)
            try:
                outcome = await self.finalize(spec)
            except (*ACTIVITY_FAILED, PassFailed) as err:
                await self._failed(change, spec, err)
                return None
            if outcome is not None:
                await self._requeue_delete(change, outcome)
                return None
        return await self._deleted(change, spec)

    async def _deleted(self, change: ResourceChange, spec: SpecT) -> str:
        await self.on_deleted(spec)
        if self.finalizer in change.finalizers and not change.gone:  # the resource is still there to see it
            await self.ops.flush(DELETED)
        await self._drop_finalizer(change)
        self.set_step("deleted")
        return "deleted"

    async def _requeue_delete(self, change: ResourceChange, outcome: Outcome) -> None:
        """The cloud object is still going: re-check on a durable timer through the loop (not a failure)."""
        self._count("waiting", outcome.conditions[0].reason)
        self.st.last_error = None
        self.st.failures = 0
        self.st.retry_at = workflow.now() + timedelta(seconds=outcome.requeue_after or 0.0)
        await self._publish(change, outcome.conditions)

    async def _drop_finalizer(self, change: ResourceChange) -> None:
        if self.finalizer in change.finalizers and not change.gone:
            self.set_step("removing finalizer")
            await self._finalizer(kube_io.REMOVE_FINALIZER, change)

    async def _finalizer(
        self, contract: Activity[FinalizerChange, WriteResult], change: ResourceChange
    ) -> bool:
        res = await self._kube_write(
            contract,
            FinalizerChange(obj=self.obj, finalizer=self.finalizer),
            summary=f"{contract.name.split('.')[1].replace('_', ' ')} {self.finalizer}",
        )
        if not res.exists:
            change.gone = True
        return res.exists

    @property
    def heartbeat_timeout(self) -> timedelta | None:
        """Read by osprov.workflows.calls.call for every activity of this run."""
        seconds = self.st.config.heartbeat_seconds
        return None if seconds is None else timedelta(seconds=seconds)

    async def _kube_write(
        self, contract: Activity[KubeWrite, WriteResult], arg: KubeWrite, summary: str
    ) -> WriteResult:
        """Status and finalizer writes are one idempotent PATCH each (preconditioned on the UID): local
        activities, with no task-queue round trip. Runs started before that keep scheduling them."""
        if patches.patched(PATCH_LOCAL_KUBE_WRITES):
            return await call_local(contract, arg, summary=summary)
        return await call(contract, arg, summary=summary)

    # ----- status and search attributes ---------------------------------------------------------
    async def _publish(
        self, change: ResourceChange, conditions: list[ConditionState], *, generation: int | None = None
    ) -> None:
        """Write the status if it changed, then record the Event the change deserves (if any).
        `generation`: the observedGeneration to report (default: the change's; a paused pass keeps the last
        reconciled one)."""
        before = self.ops.ready(self.st.conditions)
        merged = merge_conditions(self.st.conditions, conditions, workflow.now())
        self.st.conditions = merged
        observed = change.generation if generation is None else generation
        base = StatusBase(
            observed_generation=observed,
            conditions=api_conditions(merged, observed, workflow.now()),
        )
        patch = status_patch(self.status(base), self.st.written_status)
        if patch is not None:
            body, merge_patch = patch
            self.set_step(self.st.step)
            res = await self._kube_write(
                kube_io.PATCH_STATUS,
                PatchStatus(obj=self.obj, status=merge_patch),
                summary=f"write status: {merged[0].type}={merged[0].status} ({merged[0].reason})"
                if merged
                else "write status",
            )
            if not res.exists:
                change.gone = True
            self.st.written_status = body
        self._upsert_search_attributes(merged)
        await self.ops.record(before, self.ops.ready(merged))

    def _upsert_search_attributes(self, conditions: list[ConditionState]) -> None:
        if not self.st.config.upsert_search_attributes or not conditions:
            return
        ready = conditions[0]
        current = workflow.info().typed_search_attributes
        wanted = [
            sa.KIND.value_set(self.KIND),
            sa.NAMESPACE.value_set(self.st.ref.namespace),
            sa.NAME.value_set(self.st.ref.name),
            sa.READY.value_set(ready.status),
            sa.REASON.value_set(ready.reason),
            *self.search_attributes(),
        ]
        changed = [u for u in wanted if current.get(u.key) != u.value]
        if changed:
            workflow.upsert_search_attributes(changed)
