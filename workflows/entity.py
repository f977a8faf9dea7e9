"""The entity loop, written once: one long-lived workflow per custom resource.

Signals are recorded by sync handlers and merged here; a pass observes and acts through
activities; status is written back through the /status subresource only when it changed;
failures retry on durable timers (retryInterval or backoff); a periodic forced resync repairs
drift made outside; continue-as-new carries the state. Kinds subclass `Entity` and supply
`reconcile` (and `finalize` for deletionPolicy=delete) — see workflows/keystone.py.
"""

from __future__ import annotations

import contextlib
from datetime import datetime, timedelta
from typing import Any, ClassVar

from temporalio import workflow
from temporalio.common import SearchAttributeKey, SearchAttributeUpdate
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from pydantic import BaseModel, ValidationError

    from osprov.api import kube_io, registry
    from osprov.api.activity import Activity
    from osprov.api.common import parse_duration
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
    from osprov.workflows.calls import call

SA_KIND = SearchAttributeKey.for_keyword("OsprovKind")
SA_NAMESPACE = SearchAttributeKey.for_keyword("OsprovNamespace")
SA_NAME = SearchAttributeKey.for_keyword("OsprovName")
SA_READY = SearchAttributeKey.for_keyword("OsprovReady")
SA_REASON = SearchAttributeKey.for_keyword("OsprovReason")


class PassFailed(Exception):
    """A pass that cannot finish: the message says what to fix (it goes to the condition)."""

    def __init__(self, message: str, *, reason: str = "ReconcileError", retry: bool = True) -> None:
        super().__init__(message)
        self.message = message
        self.reason = reason
        self.retry = retry


class Outcome(BaseModel):
    """What a successful (or still-waiting) pass decided."""

    conditions: list[ConditionState]
    ids: dict[str, Any] = {}
    requeue_after: float | None = None  # seconds: waiting on the cloud (durable timer)


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


class Entity:
    """Base of every kind's workflow. Subclasses are `@workflow.defn` with a `@workflow.run`."""

    KIND: ClassVar[str]

    def __init__(self) -> None:
        self.s: EntityState | None = None
        self._early_secrets: dict[str, str] = {}
        self._wake = False
        self._run_passes = 0

    # ----- messages: sync handlers only record; the loop decides ---------------------------------
    @workflow.signal(name=SIGNAL_RESOURCE_CHANGED)
    def resource_changed(self, change: ResourceChange) -> None:
        s = self._state_for(change)
        if change.supersedes(s.desired):
            s.desired = change
            self._wake = True

    @workflow.signal(name=SIGNAL_SECRET_CHANGED)
    def secret_changed(self, change: SecretChanged) -> None:
        key = f"{change.namespace}/{change.name}"
        versions = self.s.secret_versions if self.s is not None else self._early_secrets
        if versions.get(key) != change.resource_version:
            versions[key] = change.resource_version
            self._wake = True

    @workflow.query(name=QUERY_STATE)
    def state(self) -> EntityState | None:
        return self.s

    def _state_for(self, change: ResourceChange) -> EntityState:
        # Signal-with-start delivers the signal before run() starts: buffer it in a fresh state.
        if self.s is None:
            self.s = EntityState(ref=change.ref)
        return self.s

    # ----- kind hooks ---------------------------------------------------------------------------
    async def reconcile(self, spec: Any, full: bool) -> Outcome:
        raise NotImplementedError

    async def finalize(self, spec: Any) -> None:
        """Delete the cloud object by its stored ID (deletionPolicy=delete only)."""

    def fingerprint(self, change: ResourceChange) -> str:
        """Desired state identity: generation plus the versions of the Secrets the spec names."""
        secrets = ",".join(f"{k}={v}" for k, v in sorted(self.st.secret_versions.items()))
        return f"{change.generation}|{secrets}"

    def is_ours(self, spec: Any) -> bool:
        return True

    def wants_finalizer(self, spec: Any) -> bool:
        return getattr(spec, "deletion_policy", "retain") == "delete"

    def retry_interval(self, spec: Any) -> timedelta | None:
        raw = getattr(spec, "retry_interval", None)
        return parse_duration(raw) if raw else None

    # ----- the loop -----------------------------------------------------------------------------
    @property
    def st(self) -> EntityState:
        assert self.s is not None
        return self.s

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

    async def run_loop(self, inp: EntityInput) -> str:
        carried = inp.carried or EntityState(ref=inp.ref, config=inp.config)
        if self.s is not None and self.s.desired is not None:  # signal-with-start delivered first
            if self.s.desired.supersedes(carried.desired):
                carried.desired = self.s.desired
            carried.secret_versions.update(self.s.secret_versions)
        carried.secret_versions.update(self._early_secrets)
        carried.config = inp.config
        self.s = carried
        self._wake = True
        while True:
            if (
                workflow.info().is_continue_as_new_suggested()
                or self._run_passes >= self.st.config.max_passes_per_run
            ):
                await workflow.wait_condition(workflow.all_handlers_finished)
                workflow.continue_as_new(EntityInput(ref=self.st.ref, config=self.st.config, carried=self.st))
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
        with contextlib.suppress(TimeoutError):
            await workflow.wait_condition(lambda: self._wake, timeout=timeout)

    def _timers_due(self) -> tuple[bool, bool]:
        now = workflow.now()
        retry = self.st.retry_at is not None and self.st.retry_at <= now
        resync = self.st.resync_at is not None and self.st.resync_at <= now
        return retry, resync

    async def _pass(self) -> str | None:  # noqa: C901 - split when the loop gets typed state (issue 16)
        """One decision: returns a final result when the workflow should end."""
        self._wake = False
        change = self.st.desired
        if change is None:
            return None
        retry_due, resync_due = self._timers_due()
        if resync_due:
            # Consumed now, whatever the pass's outcome: an overdue resync must not re-fire on every
            # loop while the resource keeps failing (the retry timer paces those passes).
            self.st.resync_at = workflow.now() + timedelta(seconds=self.st.config.resync_seconds)
        self.st.passes += 1
        self._run_passes += 1
        try:
            spec = self.info.spec_model.model_validate(change.spec)
        except ValidationError as err:
            if change.deleting or change.gone:
                await self._drop_finalizer(change)
                return "deleted (invalid spec; nothing to clean up)"
            await self._settle_invalid(change, err)
            return None
        if not self.is_ours(spec):
            # Another deployment's resource: no status, no cloud call; only our own finalizer goes.
            await self._drop_finalizer(change)
            return "ignored: belongs to another deployment"
        if change.deleting or change.gone:
            return await self._delete(change, spec)
        if self.wants_finalizer(spec) and self.finalizer not in change.finalizers:
            self.set_step("adding finalizer")
            if not await self._finalizer(kube_io.ADD_FINALIZER, change):
                return None
        elif not self.wants_finalizer(spec) and self.finalizer in change.finalizers:
            await self._drop_finalizer(change)
        fp = self.fingerprint(change)
        changed = fp != self.st.applied_fingerprint
        if not (changed or retry_due or resync_due):
            return None  # the desired-state fingerprint says nothing would change
        self.set_step("reconciling")
        try:
            # full=True: the desired state changed or the periodic resync is due, so the kind runs
            # its expensive checks too (e.g. the password probe); a plain retry does not.
            outcome = await self.reconcile(spec, full=changed or resync_due)
        except (ActivityError, PassFailed) as err:
            await self._failed(change, spec, err)
            return None
        self._count("waiting" if outcome.requeue_after is not None else "ok", outcome.conditions[0].reason)
        self.st.ids.update(outcome.ids)
        self.st.last_error = None
        self.st.failures = 0
        if outcome.requeue_after is not None:
            self.st.retry_at = workflow.now() + timedelta(seconds=outcome.requeue_after)
        else:
            self.st.applied_fingerprint = fp
            self.st.retry_at = None
            self.st.resync_at = workflow.now() + timedelta(seconds=self.st.config.resync_seconds)
            self.set_step("converged")
        await self._publish(change, outcome.conditions)
        return None

    async def _failed(self, change: ResourceChange, spec: Any, err: BaseException) -> None:
        if isinstance(err, PassFailed):
            message, reason, retry = err.message, err.reason, err.retry
        else:
            message, reason, retry = failure_message(err), "ReconcileError", True
        self._count("error", reason)
        self.st.last_error = message
        self.st.failures += 1
        if retry:
            base = self.retry_interval(spec)
            backoff = min(
                self.st.config.backoff_initial_seconds * 2 ** (self.st.failures - 1),
                self.st.config.backoff_max_seconds,
            )
            delay = max(base.total_seconds() if base else 0.0, backoff if base is None else 0.0)
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

    def failure_condition(self, reason: str, message: str) -> ConditionState:
        return ConditionState(type=self.info.ready_condition, status="False", reason=reason, message=message)

    async def _settle_invalid(self, change: ResourceChange, err: ValidationError) -> None:
        problems = "; ".join(
            f"spec.{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in err.errors(include_url=False)
        )
        self._count("invalid", "ReconcileError")
        self.st.last_error = f"invalid spec: {problems}"
        self.st.retry_at = None  # nothing changes until the resource does
        self.set_step(f"waiting for a fixed spec: {problems}")
        await self._publish(change, [self.failure_condition("ReconcileError", self.st.last_error)])

    async def _delete(self, change: ResourceChange, spec: Any) -> str | None:
        if self.wants_finalizer(spec) and (self.finalizer in change.finalizers or change.gone):
            self.set_step("deleting the cloud object")
            try:
                await self.finalize(spec)
            except (ActivityError, PassFailed) as err:
                await self._failed(change, spec, err)
                return None
        await self._drop_finalizer(change)
        self.set_step("deleted")
        return "deleted"

    async def _drop_finalizer(self, change: ResourceChange) -> None:
        if self.finalizer in change.finalizers and not change.gone:
            self.set_step("removing finalizer")
            await self._finalizer(kube_io.REMOVE_FINALIZER, change)

    async def _finalizer(
        self, contract: Activity[FinalizerChange, WriteResult], change: ResourceChange
    ) -> bool:
        res = await call(
            contract,
            FinalizerChange(obj=self.obj, finalizer=self.finalizer),
            summary=f"{contract.name.split('.')[1].replace('_', ' ')} {self.finalizer}",
        )
        if not res.exists:
            change.gone = True
        return res.exists

    # ----- status and search attributes ---------------------------------------------------------
    async def _publish(self, change: ResourceChange, conditions: list[ConditionState]) -> None:
        merged = self._merge_conditions(conditions)
        status: dict[str, Any] = {
            "observedGeneration": change.generation,
            "conditions": [self._condition_json(c, change.generation) for c in merged],
        }
        status.update(self.status_fields())
        if status != self.st.status:
            self.set_step(self.st.step)
            res = await call(
                kube_io.PATCH_STATUS,
                PatchStatus(obj=self.obj, status=status),
                summary=f"status {merged[0].type}={merged[0].status}" if merged else "status",
            )
            if not res.exists:
                change.gone = True
            self.st.status = status
        self._upsert_search_attributes(merged)

    def search_attributes(self) -> list[SearchAttributeUpdate[Any]]:
        """Kind-specific search attributes (upserted with the common ones, only when they change)."""
        return []

    def status_fields(self) -> dict[str, Any]:
        """Kind-specific status fields (IDs); default: the registry's ID field from `ids`."""
        field = self.info.id_field
        return {field: self.st.ids[field]} if field and field in self.st.ids else {}

    def _merge_conditions(self, new: list[ConditionState]) -> list[ConditionState]:
        """lastTransitionTime moves only when a condition's status changes."""
        old = {c.type: c for c in self.st.conditions}
        merged: list[ConditionState] = []
        for c in new:
            prev = old.pop(c.type, None)
            keep = prev is not None and prev.status == c.status and prev.last_transition_time
            c = c.model_copy(
                update={
                    "last_transition_time": prev.last_transition_time if keep and prev else workflow.now()
                }
            )
            merged.append(c)
        merged.extend(old.values())
        self.st.conditions = merged
        return merged

    @staticmethod
    def _condition_json(c: ConditionState, generation: int) -> dict[str, Any]:
        ts: datetime = c.last_transition_time or workflow.now()
        return {
            "type": c.type,
            "status": c.status,
            "reason": c.reason,
            "message": c.message,
            "lastTransitionTime": ts.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "observedGeneration": generation,
        }

    def _upsert_search_attributes(self, conditions: list[ConditionState]) -> None:
        if not self.st.config.upsert_search_attributes or not conditions:
            return
        ready = conditions[0]
        current = workflow.info().typed_search_attributes
        wanted = [
            SA_KIND.value_set(self.KIND),
            SA_NAMESPACE.value_set(self.st.ref.namespace),
            SA_NAME.value_set(self.st.ref.name),
            SA_READY.value_set(ready.status),
            SA_REASON.value_set(ready.reason),
            *self.search_attributes(),
        ]
        changed = [u for u in wanted if current.get(u.key) != u.value]
        if changed:
            workflow.upsert_search_attributes(changed)
