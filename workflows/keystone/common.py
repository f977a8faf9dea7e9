"""What every Keystone kind shares: it claims Keystone objects from their own workflows and reports answers.

A Keystone resource never writes Keystone itself. Each pass it sends a claim (the object's identity and the
fields it declares) to the workflow of every object it declares (workflows/keystone/objects.py, the single
writer and ownership record of that object) and waits for their answers; the Ready condition says what
they answered. An answer that changes later (a dependency appeared, a conflicting resource went away)
arrives unasked and is shown at once: no polling. Deleting the resource releases its claims; only an object
osprov created, released by its last claimant with deletionPolicy delete, is deleted.
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import timedelta
from typing import Any, ClassVar

from temporalio import workflow
from temporalio.exceptions import FailureError

with workflow.unsafe.imports_passed_through():
    from osprov.api import ownership as own
    from osprov.api import sweep
    from osprov.api.common import CommonSpec, ReadyReason, StatusModel
    from osprov.api.messages import ConditionState
    from osprov.api.ownership import Claim, Claimant, Desired, ObjectKey, ObjectResult, Release
    from osprov.api.registry import READY
    from osprov.api.state import ClaimsState, KeystoneState
    from osprov.workflows import patches
    from osprov.workflows.calls import call_local
    from osprov.workflows.entity import Entity, KindT, Outcome, PassFailed, SpecT, StatusBase
    from osprov.workflows.event_recorder import note
    from osprov.workflows.keystone import legacy
    from osprov.workflows.keystone import plan as keystone_plan
    from osprov.workflows.keystone.binding import binding_of
    from osprov.workflows.plan import Recorder

OWNERSHIP_PATCH = "keystone-ownership"
# How long a pass waits for the objects' answers (each is a few Keystone calls away); longer means an
# object workflow is stuck (Keystone down): the pass fails visibly and is retried.
ANSWER_TIMEOUT = timedelta(seconds=60)
# A claim whose answer is late stays in the objects' inboxes (its signal was accepted), so a retry waits
# for that answer instead of claiming again: at 2,000 resources the objects' workflows were minutes
# behind, and every resource re-claimed each minute, each re-claim one more step (a Keystone read) and
# answer for its object, which put them further behind. After this long the claims go out again (an
# object's workflow an operator terminated is started again by the claim).
LATE_CLAIM_RESEND = timedelta(minutes=10)
PATCH_LATE_ANSWER_AWAITED = "keystone-late-answer-awaited"
# While answers are late no retry timer paces the passes: the answer's arrival wakes the loop (a kick) and
# is this pass's answer, and the next pass without one is the resend. At 2,000 resources a Project retried
# about once a minute for the minutes its object was behind, each retry a timer, a 60 s wait and three
# workflow tasks (46.8 events per Project, 17 at 300), and its answer then cost a second claim.
PATCH_LATE_ANSWER_WAKES = "keystone-late-answer-wakes"
# An answer that arrived before the state existed is kept (KeystoneEntity.object_result); before, dropped.
PATCH_EARLY_ANSWERS_KEPT = "keystone-early-answers-kept"
# A pass that only an answer's arrival asked for, on the desired state whose claims went out last, takes
# the objects' latest answers to those claims instead of claiming again. Before, a pass that had failed
# (an object answered "waiting" for a dependency) left its desired state unapplied, so the pass the
# object's next answer woke (the dependency appeared and the object made its object) claimed everything
# again, and each object read itself once more to answer it: in a Cinder example run whose endpoints'
# objects looked for their service before it existed, the Endpoint, the last resource Ready, waited
# ~0.2 s for that second round.
PATCH_ANSWERED_AGAIN = "keystone-answered-again"

Claims = dict[str, tuple[ObjectKey, Desired]]  # object path -> (key, what this resource declares)


class KeystoneEntity(Entity[SpecT, KindT]):
    """Base of the Keystone kinds; a kind says which objects it declares (`claims`) and how its status
    shows their answers (`status`)."""

    KEYSTONE_KIND: ClassVar[str]  # the Keystone type runs from before ownership deleted by ID (legacy)
    OBSERVES = True  # managementPolicy unmanaged: the objects' workflows only observe (keystone/binding.py)
    PLAN_READS = keystone_plan.READS

    def __init__(self) -> None:
        super().__init__()
        self._awaiting: int | None = None  # the claim seq a pass is waiting on (answers to it are expected)
        self._fresh: list[ObjectResult] = []  # answers that brought news since the last render (Events)
        self._early: list[ObjectResult] = []  # answers that arrived before the state existed

    # ----- kind hooks ---------------------------------------------------------------------------
    def claims(self, spec: SpecT) -> Claims:
        raise NotImplementedError

    async def plan(self, spec: SpecT, rec: Recorder) -> str:
        """The plan walk of the objects `spec` declares (workflows/keystone/plan.py)."""
        return await keystone_plan.walk(self, spec, rec)

    async def before_claims(self, spec: SpecT) -> None:
        """Checks that must pass before anything is claimed (User: its Secret and key exist)."""

    def answered(self, spec: SpecT, results: dict[str, ObjectResult]) -> None:
        """Record what the answers carry for the status (IDs)."""

    # ----- state ------------------------------------------------------------------------------
    @property
    def claim_state(self) -> ClaimsState:
        state = self.k
        assert isinstance(state, ClaimsState)
        return state

    def ownership(self) -> bool:
        """Whether this run claims objects. Runs that began before this release replay their old passes
        (workflows/keystone/legacy.py) and switch at their first live pass: the per-pass patch ID is new
        to every pass, so it is True exactly from the first pass this code executes live."""
        k = self.claim_state
        if not k.upgraded and (
            patches.patched(OWNERSHIP_PATCH) or workflow.patched(f"{OWNERSHIP_PATCH}@{self.st.passes}")
        ):
            k.upgraded = True
        return k.upgraded

    def claimant(self) -> Claimant:
        ref = self.st.ref
        return Claimant(
            workflow_id=workflow.info().workflow_id, resource=f"{ref.kind} {ref.namespace}/{ref.name}"
        )

    def resyncs_when_converged(self) -> bool:
        """A converged resource has no resync timer of its own: its objects report to the Keystone sweep,
        which wakes them on drift, and their answers arrive unasked when they change. Runs that began
        before the sweep (and the legacy passes) keep their periodic claims."""
        return not (self.claim_state.upgraded and patches.patched(sweep.PATCH))

    async def on_hold(self) -> None:
        """Paused: its objects stop being woken by the sweep for it (no drift repair while an operator
        works by hand). A signal to each running object's workflow, no cloud call; the full pass after
        the pause claims again, which lifts the hold."""
        k = self.claim_state
        if k.held or not k.claimed or not k.upgraded or not patches.patched(sweep.PATCH):
            return
        k.held = True
        hold = sweep.Hold(claimant=workflow.info().workflow_id)
        for key in k.claimed.values():
            handle = workflow.get_external_workflow_handle(
                key.workflow_id(self.st.config.keystone_name, workflow.info().task_queue)
            )
            with contextlib.suppress(FailureError):  # not running: nothing wakes it anyway
                await handle.signal(sweep.SIGNAL_HOLD, hold)

    # ----- answers arrive as signals -----------------------------------------------------------
    @workflow.signal(name=own.SIGNAL_OBJECT_RESULT)
    def object_result(self, result: ObjectResult) -> None:
        if self.s is None or self.s.kind is None:
            # In the run's first workflow task, before the state exists. A worker killed in that task
            # (after its claim went out) leaves the answer here, and the object answers the same claim,
            # sent again on replay, no second time: dropped, the pass waited for it until the resend.
            self._early.append(result)
            return
        k = self.claim_state
        path = result.key.path
        before = k.results.get(path)
        if before is not None and result.seq < before.seq:
            return  # an answer to an older claim
        k.results[path] = result
        if before != result:
            self._fresh.append(result)
        if self._awaiting is None and result.outcome != "released" and before != result:
            self.kick()  # the object's answer changed on its own: show it

    # ----- the pass ---------------------------------------------------------------------------
    async def reconcile(self, spec: SpecT, full: bool) -> Outcome:
        if not self.ownership():
            return await legacy.reconcile(self, spec, full)
        if self._early:
            early, self._early = self._early, []
            if patches.patched(PATCH_EARLY_ANSWERS_KEPT):
                for result in early:
                    self.object_result(result)
        await self.before_claims(spec)
        wanted = self.claims(spec)
        k = self.claim_state
        moved = {p: key for p, key in k.claimed.items() if p not in wanted}
        if moved:
            # The identifying fields changed (only possible without the CRD's immutability rule): the
            # objects this resource declared before are released, the new ones claimed.
            await self._release(moved, spec.deletion_policy.value, wait=spec.deletion_policy == "delete")
        if not self.kicked or set(k.results) < set(wanted):
            await self._claim(spec, wanted, full)
        results = {p: k.results[p] for p in wanted}
        self.answered(spec, results)
        return self.render(list(results.values()))

    async def _claim(self, spec: CommonSpec, wanted: Claims, full: bool) -> None:
        k = self.claim_state
        claimant = self.claimant()
        claims = [
            Claim(
                keystone=self.st.config.keystone_name,
                claimant=claimant,
                key=key,
                desired=desired,
                deletion_policy=spec.deletion_policy.value,
                seq=k.seq + 1,
                full=full,
                binding=binding_of(spec),
                heartbeat_seconds=self.st.config.heartbeat_seconds,
                resync_seconds=self.ops.resync_seconds(),
            )
            for key, desired in wanted.values()
        ]
        what = "the answers of the Keystone objects' workflows"
        fingerprint = sweep.digest({"claims": [c.model_dump(mode="json", exclude={"seq"}) for c in claims]})
        if (
            not k.held
            and k.late == fingerprint
            and not self._unanswered(k.seq, list(wanted))
            and patches.patched(PATCH_LATE_ANSWER_WAKES)
        ):
            k.late = k.late_since = None  # the late answers to these very claims came: they answer this pass
            return
        sent = f"{fingerprint}|{self.pass_fingerprint}"
        if (
            self.kick_only
            and not k.held
            and k.sent == sent
            and not self._unanswered(k.seq, list(wanted))
            and patches.patched(PATCH_ANSWERED_AGAIN)
        ):
            return  # these very claims, answered again on their own (a dependency appeared): their answer
        if self._still_late(fingerprint, list(wanted)) and patches.patched(PATCH_LATE_ANSWER_AWAITED):
            self.set_step(f"waiting for the late answers of {', '.join(str(c.key) for c in claims)}")
            await self._await_answers(k.seq, list(wanted), what, fingerprint, sent=False)
            return
        k.held = False  # a claim lifts a hold (the object's claim handler does the same)
        k.seq += 1
        k.sent = sent
        for path, (key, _) in wanted.items():
            k.claimed[path] = key
        self.set_step(f"claiming {', '.join(str(c.key) for c in claims)}")
        await asyncio.gather(
            *(call_local(own.CLAIM, c, summary=f"declare {c.key} to its workflow") for c in claims)
        )
        await self._await_answers(k.seq, list(wanted), what, fingerprint)

    def _still_late(self, fingerprint: str, paths: list[str]) -> bool:
        """The same claims (a full pass's too) as the ones whose answer is late, still unanswered, sent
        less than LATE_CLAIM_RESEND ago (runs from before PATCH_LATE_ANSWER_WAKES act on an answer that came,
        even an error, by claiming again; later ones take it as the pass's answer)."""
        k = self.claim_state
        return (
            not k.held
            and k.late == fingerprint
            and bool(self._unanswered(k.seq, paths))
            and k.late_since is not None
            and workflow.now() - k.late_since < LATE_CLAIM_RESEND
        )

    def _unanswered(self, seq: int, paths: list[str]) -> list[str]:
        """The objects (paths) whose latest answer is older than claim `seq`."""
        results = self.claim_state.results
        return [p for p in paths if p not in results or results[p].seq < seq]

    async def _await_answers(
        self, seq: int, paths: list[str], what: str, fingerprint: str | None = None, *, sent: bool = True
    ) -> None:
        """Wait for the answers to claim `seq`; `fingerprint` (a claim's, not a release's): late answers are
        remembered as such, `sent` says the claims were just sent (the resend window starts again)."""
        k = self.claim_state
        self._awaiting = seq
        try:
            await workflow.wait_condition(
                lambda: not self._unanswered(seq, paths),
                timeout=ANSWER_TIMEOUT,
                timeout_summary=f"wait for {what}",
            )
        except TimeoutError:
            late = self._unanswered(seq, paths)
            retry_in = None
            if fingerprint is not None and patches.patched(PATCH_LATE_ANSWER_WAKES):
                if sent or k.late != fingerprint:
                    k.late, k.late_since = fingerprint, workflow.now()
                assert k.late_since is not None
                # The next pass is the resend; the answer's arrival wakes the loop before it.
                retry_in = max(k.late_since + LATE_CLAIM_RESEND - workflow.now(), timedelta(0))
            elif fingerprint is not None and k.late != fingerprint:
                k.late, k.late_since = fingerprint, workflow.now()
            raise PassFailed(
                f"no answer yet from the workflows of {', '.join(late)} — still waiting", retry_in=retry_in
            ) from None
        finally:
            self._awaiting = None
        k.late = k.late_since = None

    def render(self, results: list[ObjectResult]) -> Outcome:
        """The Ready condition from the answers: the first problem, or everything that was done."""
        self._report(results)
        for outcome, reason, retry in (
            ("conflict", "Conflict", False),
            ("refused", "ImportNotAllowed", False),  # until the operator's allow-list changes (resync)
            ("error", ReadyReason.RECONCILE_ERROR.value, True),
            ("waiting", ReadyReason.RECONCILE_ERROR.value, False),  # woken when the dependency appears
        ):
            problem = next((r for r in results if r.outcome == outcome), None)
            if problem is not None:
                raise PassFailed(problem.message, reason=reason, retry=retry)
        outcomes = {r.outcome for r in results}
        reason = (
            "Adopted"
            if "adopted" in outcomes
            else "Observed"
            if outcomes == {"observed"}
            else ReadyReason.RECONCILED.value
        )
        message = "; ".join(r.message for r in results)
        return Outcome(conditions=[ConditionState.of(READY, True, reason, message)])

    def _report(self, results: list[ObjectResult]) -> None:
        """Events for what the objects' workflows did since the last render: created, updated, or waiting
        on a dependency (the rest shows as a transition of the Ready condition)."""
        paths = {r.key.path for r in results}
        fresh, self._fresh = [r for r in self._fresh if r.key.path in paths], []
        for action, reason in (("created", "Created"), ("updated", "Updated")):
            done = [r.message for r in fresh if r.action == action]
            if done:
                self.event(note(reason, "; ".join(done)))
        waiting = next((r for r in fresh if r.outcome == "waiting"), None)
        if waiting is not None:
            self.event(note("Waiting", waiting.message))

    # ----- deletion -----------------------------------------------------------------------------
    async def finalize(self, spec: SpecT) -> None:
        if not self.ownership():
            await legacy.finalize(self, spec)
            return
        await self._release(dict(self.claim_state.claimed), "delete", wait=True)

    async def on_deleted(self, spec: SpecT) -> None:
        # deletionPolicy retain (no finalizer): the claims go, the objects stay.
        if self.claim_state.upgraded and self.claim_state.claimed:
            await self._release(dict(self.claim_state.claimed), "retain", wait=False)

    async def _release(self, keys: dict[str, ObjectKey], policy: Any, *, wait: bool) -> None:
        k = self.claim_state
        k.seq += 1
        seq, claimant = k.seq, self.claimant()
        self.set_step(f"releasing {', '.join(str(key) for key in keys.values())}")
        running = await asyncio.gather(
            *(
                call_local(
                    own.RELEASE,
                    Release(
                        keystone=self.st.config.keystone_name,
                        claimant=claimant,
                        key=key,
                        deletion_policy=policy,
                        seq=seq,
                    ),
                    summary=f"release {key}"
                    + (" (delete it if osprov made it and no one else declares it)" if wait else ""),
                )
                for key in keys.values()
            )
        )
        answered = [p for p, up in zip(keys, running, strict=True) if up]
        if wait and answered:
            await self._await_answers(
                seq, answered, "the objects to be released (and deleted where osprov may)"
            )
        for path in keys:
            k.claimed.pop(path, None)
            k.results.pop(path, None)


def one(key: ObjectKey, desired: Desired | None = None) -> Claims:
    return {key.path: (key, desired or Desired())}


class KeystoneObjectEntity(KeystoneEntity[SpecT, KeystoneState]):
    """A kind that declares one Keystone object; its ID goes to the status field named after the kind."""

    STATE = KeystoneState

    def answered(self, spec: SpecT, results: dict[str, ObjectResult]) -> None:
        (result,) = results.values()
        self.k.id = result.id

    def status(self, base: StatusBase) -> StatusModel:
        field = self.info.id_attribute
        return self.info.status_model(**base, **({field: self.k.id} if field else {}))
