"""Volume: a Cinder volume named volume-{uid} in its Identity's project (or an allowed spec.project).

Contract: ../shared/spec/volumes.md. The decisions are pure functions in workflows/volume_decisions.py;
this module executes them. Every pass rediscovers the volume by its deterministic name (exact match, done
by the activity), so a worker crash between "create accepted" and "status written" adopts the volume
instead of duplicating it. Every pass starts with the tenancy step (workflows/tenancy.py): which project, and
which credential every call runs on. An accepted create is not success: the pass requeues on a durable timer until
Cinder reports the volume available; a delete is re-checked the same way, one read per pass. Step labels
(C…, S…, D…) are those of the tables in volume_decisions.py and docs/volume.md, of
tests/workflows/test_volume_decisions.py (one row each) and of test_volume.py (scenarios).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta
from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from osprov.api import cinder_io as io
    from osprov.api import inventory_io
    from osprov.api.activity import Activity
    from osprov.api.cinder import VolumeSpec, VolumeStatus
    from osprov.api.common import AvailableReason
    from osprov.api.errors import CONSISTENCY, NOT_FOUND
    from osprov.api.messages import ConditionState, EntityInput
    from osprov.api.registry import AVAILABLE
    from osprov.api.state import VolumeState
    from osprov.workflows import patches
    from osprov.workflows.calls import call, call_local
    from osprov.workflows.entity import ACTIVITY_FAILED, Outcome, PassFailed, StatusBase, error_type
    from osprov.workflows.event_recorder import note
    from osprov.workflows.plan import AFTER_WRITE, PlanStopped, Recorder
    from osprov.workflows.tenancy import CloudEntity, Where
    from osprov.workflows.volume_decisions import (
        DELETE_WAIT,
        ERROR_LOG,
        Decision,
        Done,
        Errored,
        Fail,
        Observation,
        Provisioned,
        Target,
        Wait,
        create,
        delete,
        extended,
        observe,
        observe_import,
    )

# Poll intervals while waiting on Cinder (seconds): short first, since the fake backend and a healthy
# Cinder settle in about a second; grown by half each time up to the cap, so a slow backend is not
# hammered and a wait overshoots Cinder's own time by at most about a third.
POLL_FIRST_SECONDS = 0.5
POLL_GROWTH = 1.5
POLL_MAX_SECONDS = 10.0
# Runs that started deleting before PATCH_FINALIZE_REQUEUE poll inside one pass: this many reads, then
# the pass fails and the loop retries with backoff, so one pass never grows the history without bound.
MAX_DELETE_POLLS = 30
# Deleting as passes of the entity loop: one read per pass, requeued (new commands: the loop's timer and
# the Deprovisioning status written at the first re-check).
PATCH_FINALIZE_REQUEUE = "volume-finalize-requeue"
# C0: the volume class is checked against the region inventory before any Cinder call (a new local activity).
PATCH_CLASS_CHECK = "volume-class-check"
# O1…O4: managementPolicy unmanaged observes the imported volume (runs before it refused, calling nothing).
PATCH_OBSERVE = "volume-observe"
# S3, D3, D6: a wait on Cinder is one heartbeating activity that reads every half second for up to a
# minute (then the loop's timer takes over); runs from before re-read once per pass on a timer.
PATCH_AWAIT = "volume-await-in-activity"
AWAIT_WITHIN_SECONDS = 60.0
# C6/C7: a larger spec.size extends the volume in place (a new activity, cinder.extend_volume).
PATCH_EXTEND = "volume-extend"
# C3 at once: a volume never seen is created without C1's lookup activity (cinder.create_volume makes
# the same exact-name lookup itself); runs from before look it up first.
PATCH_CREATE_LOOKS = "volume-create-looks-itself"
# The writes a plan walk records (workflows/plan.py), by the decision's request type.
PLAN_WRITES: dict[type[Any], Activity[Any, Any]] = {
    io.CreateVolume: io.CREATE_VOLUME,
    io.UpdateMetadata: io.UPDATE_METADATA,
    io.ExtendVolume: io.EXTEND_VOLUME,
}


def poll_delay(polls: int) -> float:
    """Seconds before the next read after `polls` reads that found the volume still on its way."""
    return float(min(POLL_FIRST_SECONDS * POLL_GROWTH**polls, POLL_MAX_SECONDS))


def _available(ok: bool, reason: AvailableReason, message: str) -> ConditionState:
    return ConditionState.of(AVAILABLE, ok, reason, message)


@workflow.defn(name="Volume")
class VolumeWorkflow(CloudEntity[VolumeSpec, VolumeState]):
    KIND = "Volume"
    STATE = VolumeState
    PLAN_READS = frozenset({inventory_io.OFFERED_VOLUME_CLASSES.name, io.FIND_VOLUMES.name})

    def __init__(self) -> None:
        super().__init__()
        self.seen = Observation()  # what the last pass observed (the volume a wait is about)

    @workflow.run
    async def run(self, inp: EntityInput) -> str:
        return await self.run_loop(inp)

    def target(self, where: Where) -> Target:
        ref = self.st.ref
        system = {
            "kind": self.KIND,
            "namespace": ref.namespace,
            "name": ref.name,
            "uid": ref.uid,
            "project": where.label,
        }
        scope = io.ProjectScope(project=where.project, domain=where.domain, credential=where.credential)
        return Target(
            name=io.volume_name(ref.uid),
            system=system,
            scope=scope,
            check_class=patches.patched(PATCH_CLASS_CHECK),
            volume_known=self.k.volume_id is not None,
            extends=patches.patched(PATCH_EXTEND),
            creates_at_once=patches.patched(PATCH_CREATE_LOOKS),
        )

    def observes(self) -> bool:
        return patches.patched(PATCH_OBSERVE)

    def status(self, base: StatusBase) -> VolumeStatus:
        return VolumeStatus(**base, volume_id=self.k.volume_id, size=self.k.size)

    def failure_condition(self, reason: str, message: str) -> ConditionState:
        # Every failure is reported with one of the Available reasons (the loop's generic ReconcileError
        # and invalid specs included).
        known = {r.value for r in AvailableReason}
        if reason not in known:
            deleting = self.st.desired is not None and (self.st.desired.deleting or self.st.desired.gone)
            reason = (AvailableReason.DEPROVISIONING if deleting else AvailableReason.PROVISIONING).value
        return ConditionState.of(AVAILABLE, False, reason, message)

    # ----- executing decisions ------------------------------------------------------------------------
    async def _run_pass(self, decide: Callable[[Observation], Decision]) -> Decision:
        """Ask, call, fold in, ask again; returns the decision that ends the pass (Fail raises). What was
        observed stays in `self.seen` (the volume a wait is about)."""
        obs = self.seen = Observation()
        while True:
            d = decide(obs)
            self.set_step(d.step)
            a = d.action
            if isinstance(a, Fail):
                if a.log:  # operator log only: Cinder's statuses and IDs never reach the status
                    self._log(a.log, a.volumes)
                raise PassFailed(a.message, reason=a.reason.value)
            if isinstance(a, inventory_io.OfferQuery):
                offer = await call_local(inventory_io.OFFERED_VOLUME_CLASSES, a, summary=d.step)
                obs = replace(obs, offer=offer)
            elif isinstance(a, io.FindVolumes):
                lookup = await call(io.FIND_VOLUMES, a, summary=d.step)
                obs = replace(obs, lookup=lookup)
            elif isinstance(a, io.CreateVolume):
                try:
                    made = await call(io.CREATE_VOLUME, a, summary=d.step)
                except ACTIVITY_FAILED as err:
                    if obs.lookup is not None or error_type(err) not in (NOT_FOUND, CONSISTENCY):
                        raise
                    obs = replace(obs, create_refused=True)  # C3 at once: C1's lookup says why
                    continue
                self.event(note("Created", f"created Cinder volume {a.name} ({a.size} GiB)"))
                obs = replace(obs, volume=made)
            elif isinstance(a, io.UpdateMetadata):
                await call(io.UPDATE_METADATA, a, summary=d.step)
                self.event(note("Updated", d.what))
                obs = replace(obs, updated=True)
            elif isinstance(a, io.ExtendVolume):
                # Retries are safe: the activity reads first, and Cinder accepts one extend per target
                # (it moves the volume to extending before it answers; a second gets 400).
                grown = await call(io.EXTEND_VOLUME, a, summary=d.step)
                self.event(note("Extending", f"asked Cinder to extend the volume to {a.size} GiB"))
                obs = replace(obs, extended=grown)
            elif isinstance(a, io.DeleteVolume):
                await call(io.DELETE_VOLUME, a, summary=d.step)
                obs = replace(obs, volume=self._found(obs))
            else:
                self.seen = obs
                return d

    async def _await(
        self, target: Target, volume_id: str, *, gone: bool, showing: ConditionState
    ) -> io.VolumeLookup | None:
        """The wait of S3/D3/D6 in one activity (reads by ID every 0.5 s, at most AWAIT_WITHIN_SECONDS),
        after publishing what it waits for (`showing`: the status says so while Cinder works). None: news
        (e.g. a deletion) cut it short; the next pass runs at once."""
        if self.st.desired is not None:
            await self._publish(self.st.desired, [showing])
        what = "to be gone" if gone else "to settle"
        return await self.until_news(
            call(
                io.AWAIT_VOLUME,
                io.AwaitVolume(
                    scope=target.scope,
                    id=volume_id,
                    gone=gone,
                    within_seconds=AWAIT_WITHIN_SECONDS,
                    busy_seen_at=workflow.now(),  # this pass's read or accepted change: Cinder is busy
                ),
                summary=f"wait for Cinder: volume {target.name} {what} (a read every 0.5 s)",
                timeout=timedelta(seconds=AWAIT_WITHIN_SECONDS + 30),
            )
        )

    def _waited_volume(self) -> str | None:
        """The ID of the volume this pass found (and may have sent a delete for)."""
        obs = self.seen
        if obs.volume is not None:
            return obs.volume.id
        return obs.lookup.volumes[0].id if obs.lookup is not None and obs.lookup.volumes else None

    @staticmethod
    def _found(obs: Observation) -> io.Volume:
        assert obs.lookup is not None and obs.lookup.volumes
        return obs.lookup.volumes[0]

    def _log(self, message: str, volumes: tuple[io.Volume, ...]) -> None:
        workflow.logger.warning(
            message,
            extra={
                "volume_name": volumes[0].name if volumes else None,
                "volume_ids": [v.id for v in volumes],
                "cinder_statuses": [v.status for v in volumes],
            },
        )

    # ----- create --------------------------------------------------------------------------------
    async def reconcile(self, spec: VolumeSpec, full: bool) -> Outcome:
        where = await self.where(spec, deleting=False)
        assert where is not None
        target = self.target(where)
        if spec.unmanaged:  # O1…O4: only read; the status mirrors the imported volume
            d = await self._run_pass(lambda obs: observe_import(spec, target, obs))
        else:
            d = await self._run_pass(lambda obs: create(spec, target, full, obs))
        if isinstance(d.action, Wait) and d.observed is not None and patches.patched(PATCH_AWAIT):  # S3
            waiting = _available(False, AvailableReason.PROVISIONING, d.action.message)
            settled = await self._await(target, d.observed.id, gone=False, showing=waiting)
            if settled is not None and settled.volumes:
                last = settled.volumes[0]  # S1, S2, or still S3 after a minute: the timer below
                d = extended(spec, last) if self.seen.extended is not None else observe(last)  # C7 after C6
        if d.observed is not None:
            self.k.volume_id, self.k.size = d.observed.id, d.observed.size
        if isinstance(d.action, Fail):  # C7: the extend did not take; the loop retries with backoff
            raise PassFailed(d.action.message, reason=d.action.reason.value)
        volume = d.action.volume if isinstance(d.action, Errored) else None
        if isinstance(d.action, Provisioned):  # S1
            self.k.polls = 0
            return Outcome(conditions=[_available(True, AvailableReason.PROVISIONED, d.action.message)])
        if volume is not None:  # S2: terminal until the resource (or the volume) changes
            self.k.polls = 0
            self._log(ERROR_LOG, (volume,))
            return Outcome(conditions=[_available(False, AvailableReason.ERRORED, io.ERROR_MESSAGE)])
        assert isinstance(d.action, Wait)  # S3
        polls = self.k.polls
        self.k.polls = polls + 1
        return Outcome(
            conditions=[_available(False, AvailableReason.PROVISIONING, d.action.message)],
            requeue_after=poll_delay(polls),
        )

    # ----- plan preview (workflows/plan.py) ---------------------------------------------------------
    async def plan(self, spec: VolumeSpec, rec: Recorder) -> str:
        """The create pass's walk (C0…C5, then S1…S3) on fresh reads; the first write ends it."""
        if spec.unmanaged:
            return "managementPolicy unmanaged: the volume is only observed, never written"
        target, obs = self.target(await self.plan_where(spec)), Observation()
        while True:
            d = create(spec, target, True, obs)
            a = d.action
            if isinstance(a, Fail):
                raise PlanStopped(f"{d.step} ({a.message})")
            if isinstance(a, inventory_io.OfferQuery):
                offer = await rec.read(inventory_io.OFFERED_VOLUME_CLASSES, a, d.step, local=True)
                obs = replace(obs, offer=offer)
            elif isinstance(a, io.FindVolumes):
                lookup = await rec.read(io.FIND_VOLUMES, a, d.step)
                obs = replace(obs, lookup=lookup)
            elif type(a) in PLAN_WRITES:
                rec.write(d.rule, PLAN_WRITES[type(a)], d.what, a)
                return AFTER_WRITE
            else:  # S1…S3: nothing to call, the volume is (or is becoming) what the spec says
                return f"{d.step}: nothing to call"

    # ----- delete --------------------------------------------------------------------------------
    async def finalize(self, spec: VolumeSpec) -> Outcome | None:
        where = await self.where(spec, deleting=True)
        if where is None:  # its Identity is gone or never got a project: no volume can exist
            return None
        target = self.target(where)
        if not patches.patched(PATCH_FINALIZE_REQUEUE):
            await self._finalize_polling(spec, target)
            return None
        d = await self._run_pass(lambda obs: delete(spec, target, obs))
        if isinstance(d.action, Done):  # D1, D2
            return None
        waiting_on = self._waited_volume()
        if d.rule in ("D3", "D6") and waiting_on is not None and patches.patched(PATCH_AWAIT):
            waiting = _available(False, AvailableReason.DEPROVISIONING, DELETE_WAIT)
            gone = await self._await(target, waiting_on, gone=True, showing=waiting)
            if gone is not None and (
                not gone.project_found or not gone.volumes
            ):  # D2: this read confirms absence
                return None
        polls = 0 if d.rule == "D3" else self.k.polls  # the delete was just sent: re-read soon
        self.k.polls = polls + 1
        return Outcome(
            conditions=[_available(False, AvailableReason.DEPROVISIONING, DELETE_WAIT)],
            requeue_after=poll_delay(polls),
        )

    async def _finalize_polling(self, spec: VolumeSpec, target: Target) -> None:
        """Runs that started deleting before PATCH_FINALIZE_REQUEUE replay this: the same decisions,
        re-read on timers inside one pass, at most MAX_DELETE_POLLS times."""
        announced = False
        for poll in range(MAX_DELETE_POLLS):
            d = await self._run_pass(lambda obs: delete(spec, target, obs))
            if isinstance(d.action, Done):
                return
            if not announced and poll > 0 and self.st.desired is not None:
                # Still there after a first re-read: tell the user what the finalizer waits for (a
                # delete Cinder finishes at once costs no status write).
                announced = True
                condition = _available(False, AvailableReason.DEPROVISIONING, DELETE_WAIT)
                await self._publish(self.st.desired, [condition])
            await workflow.sleep(poll_delay(poll), summary=f"re-check: {d.step}")
        raise PassFailed(
            "Cinder has not finished deleting the volume yet — still waiting",
            reason=AvailableReason.DEPROVISIONING.value,
        )
