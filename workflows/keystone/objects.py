"""KeystoneObject: one workflow per Keystone object, its single writer and its ownership record.

Resources claim the object (api/ownership.py); this workflow serialises everything done to it. The
ownership table (docs/security.md) is decided here, once per object:

  origin at the first observation | field and password writes                | deleted when released
  created by osprov                | converge the first claimant's fields     | by the last claimant, if its
                                   |                                          | deletionPolicy is delete
  found (existed before)           | none: Adopted, drift shown               | never
  found, operator allow-listed     | converge                                 | never
  protected (policy)               | none                                     | never

Two claimants declaring different values: the first one's apply, the later one is told Conflict. IDs of
the objects this one depends on come from their own workflows (parents.py: watch / parent_ready), which
also wake this one when a dependency appears: no polling (an absent object with watchers re-checks on a
slow timer, in case someone outside osprov creates it).
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import FailureError

with workflow.unsafe.imports_passed_through():
    from osprov.api import ownership as own
    from osprov.api import sweep as sw
    from osprov.api.keystone_io import Probe
    from osprov.api.ownership import Claim, ObjectKey, ObjectResult, ObjectState, ParentReady, Release, Watch
    from osprov.api.sweep import Forget, Report, Swept
    from osprov.workflows import patches
    from osprov.workflows.calls import call_local, together
    from osprov.workflows.entity import ACTIVITY_FAILED, failure_message
    from osprov.workflows.keystone import actuators as act
    from osprov.workflows.keystone import binding
    from osprov.workflows.keystone.converge import PATCH_READS_TOGETHER, Converger
    from osprov.workflows.keystone.parents import Parents, waiting_message

MAX_PASSES_PER_RUN = 500
# An absent object that dependents wait for is re-checked on this backoff, in case it is created outside
# osprov (osprov's own creates wake the dependents at once).
ABSENT_RECHECK_FIRST, ABSENT_RECHECK_MAX = 30.0, 300.0
# An object with dependents keeps its ID in its memo (own.MEMO_ID), where their watches read it without
# a query (activities/ownership.py watch). Only objects with watchers pay its marker and memo events.
PATCH_ID_IN_MEMO = "keystone-id-in-memo"
# A watch that read the ID from the memo only registers its watcher: no step, so the continue-as-new
# check after a step never came. At 10,000 dependents a domain's run held 11,380 events and Temporal's
# 10,000 signals per execution, then refused the next watches (INVALID_ARGUMENT). A run this long now
# continues as new between steps.
PATCH_ROLL_WITHOUT_STEP = "keystone-object-rolls-without-step"
# A step whose messages Temporal refused after their retries (an activity failure other than the
# converger's, which answers "error") is taken again after this, instead of failing the workflow, which
# would drop this object's ownership record and leave its claimants without an answer.
PATCH_STEP_RETRIED = "keystone-object-step-retried"
STEP_RETRY = timedelta(seconds=60)
# A step's answers to its claimants go as local activities (own.ANSWER), recorded beside the sweep report
# in the step's last task: a workflow's own signal cost two events and a task of its own (the "signaled"
# event wakes it), five events of a new object's history.
PATCH_ANSWER_LOCAL = "keystone-answer-local"
# Its news to its dependents goes the same way, to all of them in one local activity (own.TELL): one by one,
# each signal cost two events and a workflow task, and the next waited for it (~0.1 s per dependent on
# the dependency chain: a user's three grants were told 0.3 s apart).
# A larger fan-out (a domain's ID changing under thousands of projects) stays signal commands: Temporal
# delivers those, where one local activity holding thousands of signals would outrun the workflow task.
# The same patch sends a step's three messages (news, answers, sweep report) together, not in turn.
PATCH_TELL_LOCAL = "keystone-watchers-told-local"
TELL_LOCAL_MAX = 16
# A user made now is told to its dependents (its grants) before its password is set: they need its ID,
# and Keystone takes ~0.2 s to hash a password, which the grants waited for on the dependency chain.
PATCH_TOLD_BEFORE_PASSWORD = "keystone-user-told-before-password"
# An object that no resource claims yet, found absent, waits this long for a claim before it tells its new
# watchers "absent". A bundle applied at once (a Service and its Endpoints, a Role and its RoleAssignments)
# starts the parent's workflow from the dependents' watches, often before the parent resource's claim
# arrives: told "absent", each dependent answered "does not exist" (its resource wrote Ready=False and a
# Warning event) and was answered again a moment later: in 3 of 6 Cinder example runs on the local stack,
# up to 4 more workflow tasks of the resources (docs/benchmarks.md). A parent no resource declares is still
# reported absent, this much later.
PATCH_ABSENT_AWAITS_CLAIM = "keystone-absent-awaits-claim"
ABSENT_CLAIM_GRACE = timedelta(seconds=3)


@workflow.defn(name=own.WORKFLOW_TYPE)
class KeystoneObjectWorkflow:
    def __init__(self) -> None:
        self.s: ObjectState | None = None
        self._dirty = False
        self._full = False
        self._releases: list[Release] = []
        self._absent_checks = 0
        self._new_watchers: list[str] = []  # answered at the next step (present or not)
        self.parents = Parents(lambda: self.st, self._primary_desired)
        self._regroup = False  # a hold arrived: only the sweep report changes
        self._tell_new = False  # a watch came for the object it holds: only the new watchers are told
        self._stepping = False  # a step is running (it tells the watchers that came meanwhile)
        self._told_id: str | None = None  # the ID the running step already told every watcher
        self._published: str | None = None  # the ID this run's memo holds (own.MEMO_ID)
        self._roll = False  # the run is long: continue as new before the next step

    # ----- messages: handlers record; the loop acts --------------------------------------------
    def _state(self, keystone: str, key: ObjectKey) -> ObjectState:
        if self.s is None:  # signal-with-start: the signal is handled before run() starts
            self.s = ObjectState(keystone=keystone, key=key)
        return self.s

    @workflow.signal(name=own.SIGNAL_CLAIM)
    def claim(self, claim: Claim) -> None:
        s = self._state(claim.keystone, claim.key)
        at = next(
            (i for i, c in enumerate(s.claims) if c.claimant.workflow_id == claim.claimant.workflow_id), None
        )
        if at is None:
            s.claims.append(claim)
        else:
            s.claims[at] = claim  # a claimant keeps its place (first declared, first applied)
        s.heartbeat_seconds = claim.heartbeat_seconds
        if claim.claimant.workflow_id in s.held:  # a claim is the resumed resource's full pass
            s.held.remove(claim.claimant.workflow_id)
        self._full = self._full or claim.full
        self._dirty = True

    @workflow.signal(name=own.SIGNAL_RELEASE)
    def release(self, release: Release) -> None:
        self._state(release.keystone, release.key)
        self._releases.append(release)
        self._dirty = True

    @workflow.signal(name=own.SIGNAL_WATCH)
    def watch(self, watch: Watch) -> None:
        s = self._state(watch.keystone, watch.key)
        if watch.watcher not in s.watchers:
            s.watchers.append(watch.watcher)
        if watch.known_id is not None and s.present and s.id == watch.known_id:
            self._roll_if_long()
            return  # the watcher read this ID from the memo (MEMO_ID): registered, nothing to tell
        self._new_watchers.append(watch.watcher)
        if (self._stepping or (s.present and s.id is not None)) and patches.patched(PATCH_TELL_LOCAL):
            # Told what the running step sees, or what this run last saw (as the memo would): no step.
            self._tell_new = True
        else:
            self._dirty = True

    def _roll_if_long(self) -> None:
        if self._roll:
            return
        info = workflow.info()
        long = (
            info.is_continue_as_new_suggested()
            or info.get_current_history_length() >= own.MAX_HISTORY_PER_RUN
        )
        if long and patches.patched(PATCH_ROLL_WITHOUT_STEP):
            self._roll = True

    @workflow.signal(name="unwatch")
    def unwatch(self, watch: Watch) -> None:
        s = self._state(watch.keystone, watch.key)
        if watch.watcher in s.watchers:
            s.watchers.remove(watch.watcher)
        self._dirty = True

    @workflow.signal(name=sw.SIGNAL_RESYNC)
    def resync(self, reason: str) -> None:
        """The sweep saw this object differ from what it last reported: a full step (re-read, probe,
        policy), answering the claimants only if their answer changes. Not while the applied declaration's
        resource is paused (it left the sweep; a wake-up already in flight is dropped)."""
        if not self._held():
            self._full = True
            self._dirty = True

    @workflow.signal(name=sw.SIGNAL_HOLD)
    def hold(self, hold: sw.Hold) -> None:
        if self.s is not None and hold.claimant not in self.s.held:
            self.s.held.append(hold.claimant)
            self._regroup = True  # leave the sweep (no step: no Keystone call)

    def _held(self) -> bool:
        primary = binding.writer(self.s.claims) if self.s is not None else None
        return primary is not None and self.s is not None and primary.claimant.workflow_id in self.s.held

    @workflow.signal(name=own.SIGNAL_PARENT_READY)
    def parent_ready(self, ready: ParentReady) -> None:
        if self.s is not None and self.parents.answered(ready):
            self._dirty = True

    @property
    def heartbeat_timeout(self) -> timedelta | None:
        """Read by osprov.workflows.calls.call: the claimants' setting (Claim.heartbeat_seconds), so a dead
        worker's create is retried in seconds, and time-skipping tests (which turn it off) stay exact."""
        seconds = self.s.heartbeat_seconds if self.s is not None else None
        return None if seconds is None else timedelta(seconds=seconds)

    @workflow.query(name=own.QUERY_OBJECT)
    def record(self) -> ObjectState | None:
        """The ownership record and single-writer state (also what `osprov status` shows)."""
        return self.s

    # ----- the loop ---------------------------------------------------------------------------
    @workflow.run
    async def run(self, inp: own.ObjectInput) -> str:
        patches.begin_run(inp.generation)
        s = self._begin(inp)
        while True:
            if await self._wait():
                self._dirty = await self.parents.register() or self._dirty
                continue
            if self._roll and not (self._dirty or self._regroup or self._tell_new):
                await self._continue_as_new()
            if self._tell_new and not self._dirty:  # watched: tell the new watchers, call nothing else
                try:
                    await self._tell_watchers(False)
                except ACTIVITY_FAILED:  # they stay new: told again after the pause
                    await workflow.sleep(STEP_RETRY, summary="tell the new dependents again")
                    continue
                self._publish_id()
                continue
            if self._regroup and not self._dirty:  # held: leave the sweep, call nothing else
                self._regroup = False
                await self._report(None)
                continue
            self._dirty = self._regroup = False
            s.passes += 1
            try:
                self._stepping = True
                await self._step()
            except ACTIVITY_FAILED as err:
                self._stepping = False
                if not patches.patched(PATCH_STEP_RETRIED):
                    raise  # a run recorded before this failed here
                workflow.logger.warning("Keystone object step failed", extra={"error": failure_message(err)})
                self._dirty = True
                await workflow.sleep(STEP_RETRY, summary="take the step again (a message was refused)")
                continue
            self._stepping = False
            self._publish_id()
            if self._finished():
                await self._report(None)
                await workflow.wait_condition(workflow.all_handlers_finished)
                return self._end_reason()
            if self._roll or workflow.info().is_continue_as_new_suggested() or s.passes >= MAX_PASSES_PER_RUN:
                await self._continue_as_new()

    def _begin(self, inp: own.ObjectInput) -> ObjectState:
        s = inp.carried or ObjectState(keystone=inp.keystone, key=inp.key)
        if self.s is not None:  # claims and watches that arrived with the start
            for c in self.s.claims:
                if all(x.claimant.workflow_id != c.claimant.workflow_id for x in s.claims):
                    s.claims.append(c)
            s.watchers += [w for w in self.s.watchers if w not in s.watchers]
        self.s = s
        self._published = workflow.memo_value(own.MEMO_ID, None, type_hint=str)  # carried by continue-as-new
        self._dirty = True
        if s.unregistered:  # carried by continue-as-new: still owed
            self.parents.owe()
        return s

    async def _wait(self) -> bool:
        """Wait for a message, or for the timer of an absent object's re-check or of the registrations
        owed; True when only the registrations' timer fired (no step: nothing else is due)."""
        timeout = self._recheck_after()
        summary = f"re-check whether {self.st.key} exists (dependents are waiting for it)"
        register = self.parents.register_in()
        registering = register is not None and (timeout is None or register < timeout)
        if registering:
            timeout, summary = register, "register with the parents that were busy"
        try:
            await workflow.wait_condition(
                lambda: self._dirty or self._regroup or self._roll or self._tell_new,
                timeout=timedelta(seconds=timeout) if timeout else None,
                timeout_summary=summary,
            )
        except TimeoutError:
            return registering
        return False

    async def _continue_as_new(self) -> None:
        s = self.st
        await workflow.wait_condition(workflow.all_handlers_finished)
        s.passes = 0
        memo = {own.MEMO_ID: self._published} if self._published else None
        workflow.continue_as_new(
            own.ObjectInput(keystone=s.keystone, key=s.key, carried=s, generation=patches.known()), memo=memo
        )

    def _publish_id(self) -> None:
        """Keep the memo's ID what this object holds, once it has dependents (and while it had them)."""
        s = self.st
        current = s.id if s.present else None
        if current == self._published or not (s.watchers or self._published):
            return
        if not patches.patched(PATCH_ID_IN_MEMO):
            return  # a run recorded before the memo: its dependents are answered by signal, as then
        workflow.upsert_memo({own.MEMO_ID: current})  # None removes the key: absent means "ask"
        self._published = current

    def _finished(self) -> bool:
        s = self.st
        remembered = s.origin == "created" and s.present  # osprov's own object: keep its record
        return not s.claims and not s.watchers and not self._releases and not remembered

    def _end_reason(self) -> str:
        return "deleted" if self.st.origin == "created" else "no claimant left"

    def _recheck_after(self) -> float | None:
        s = self.st
        # Absent and awaited by dependents, or by claimants none of whom may create it (imports, observers).
        outside = binding.waits_for_outside(s.claims) or (not s.claims and bool(s.watchers))
        if s.present or not outside:
            self._absent_checks = 0
            return None
        delay = min(ABSENT_RECHECK_FIRST * 2.0**self._absent_checks, ABSENT_RECHECK_MAX)
        self._absent_checks += 1
        return float(delay)

    @property
    def st(self) -> ObjectState:
        assert self.s is not None
        return self.s

    def _primary_desired(self) -> own.Desired | None:
        s = self.s
        if s is None or not s.claims:
            return None
        return (binding.writer(s.claims) or s.claims[0]).desired

    # ----- one step -----------------------------------------------------------------------------
    async def _step(self) -> None:
        s = self.st
        full, self._full = self._full, False
        policy_due = s.policy is None or full
        # The policy is first used by the converger's writes, so it is read beside the object's own lookup
        # (converge.py PATCH_READS_TOGETHER). A release decides by it: a step that releases reads it first.
        beside = (
            policy_due
            and not self._releases
            and bool(s.claims or s.watchers)
            and patches.patched(PATCH_READS_TOGETHER)
        )
        if policy_due and not beside:
            s.policy = await self._read_policy()
        if beside:
            s.policy = None  # read again by the step that reaches the lookup (this one, unless it waits)
        converger = Converger(s, full, self._tell_created)
        if self._releases:
            releases, self._releases = self._releases, []
            for i, release in enumerate(releases):
                try:
                    await self._release(converger, release)
                except ACTIVITY_FAILED:
                    self._releases = releases[i:] + self._releases  # the step taken again releases them
                    raise
        if not s.claims and not s.watchers:
            await self._report(None)
            return
        if not await self._parents_known():
            return
        observed: Converger | None = converger
        try:
            results = await converger.run(self._read_policy if beside else None)
        except ACTIVITY_FAILED as err:
            observed = None
            if converger.parents_stale:
                s.parent_ids.clear()
                self._dirty = True
            results = {
                c.claimant.workflow_id: self._result(c, "error", failure_message(err)) for c in s.claims
            }
        await self._send(converger.id_changed, results, observed)

    async def _read_policy(self) -> own.Policy:
        s = self.st
        policy: own.Policy = await call_local(own.POLICY, s.key, summary=f"operator policy for {s.key}")
        return policy

    async def _tell_created(self) -> None:
        """Called by the step between a user's create and its password: tell every watcher its ID now."""
        if patches.patched(PATCH_TOLD_BEFORE_PASSWORD):
            await self._tell_watchers(True)
            self._told_id = self.st.id

    async def _send(
        self, changed: bool, results: dict[str, ObjectResult], observed: Converger | None
    ) -> None:
        """A step's messages: news to its dependents, answers to its claimants, the sweep's report."""
        if await self._claimed_within_grace():
            return  # the step the claim wakes tells the new watchers what it finds or makes
        told, self._told_id = self._told_id, None
        if told is not None and told == self.st.id:
            changed = False  # told already, right after the create (_tell_created): only new ones now
        if not patches.patched(PATCH_TELL_LOCAL):
            await self._tell_watchers(changed)
            await self._answer(results)
            if observed is not None:
                await self._report(observed)
            return
        messages = [self._tell_watchers(changed), self._answer(results)]
        if observed is not None:
            messages.append(self._report(observed))
        # Together: one round of local activities instead of one after another (each round is a workflow
        # activation, ~50 ms on a busy worker). A failed one fails the step once all have ended.
        await together(*messages)

    async def _claimed_within_grace(self) -> bool:
        """True when a claim (or a release) came within ABSENT_CLAIM_GRACE of a step that found this
        unclaimed object absent with watchers not yet told: "absent" is not sent (the claim's step tells)."""
        s = self.st
        if s.present or s.claims or self._releases or not self._new_watchers:
            return False
        if not patches.patched(PATCH_ABSENT_AWAITS_CLAIM):
            return False
        try:
            await workflow.wait_condition(
                lambda: bool(s.claims or self._releases),
                timeout=ABSENT_CLAIM_GRACE,
                timeout_summary=f"a resource's claim of {s.key} before its dependents hear it is absent",
            )
        except TimeoutError:
            return False
        return True

    # ----- the sweep (drift detection without a timer per object) --------------------------------
    async def _report(self, converger: Converger | None) -> None:
        """Tell the sweep what this step saw (only when that changed); forget when absent or unclaimed.
        `converger`: the step that observed the object (None: no observation, only forgetting applies)."""
        s = self.st
        claimed = s.present and bool(s.claims) and not self._held()
        if claimed and converger is None:
            return  # nothing observed this step: the last report stands
        swept = self._swept(converger) if claimed and converger is not None else None
        fingerprint = sw.digest(swept.model_dump(mode="json")) if swept is not None else None
        if fingerprint == s.swept or not patches.patched(sw.PATCH):
            return
        if swept is not None:
            await call_local(
                sw.REPORT, Report(keystone=s.keystone, swept=swept), summary="report to the sweep"
            )
        else:
            await call_local(
                sw.FORGET, Forget(keystone=s.keystone, path=s.key.path), summary="leave the sweep"
            )
        s.swept = fingerprint

    def _swept(self, converger: Converger) -> Swept:
        s = self.st
        primary = binding.writer(s.claims)
        probe = None
        if (
            s.key.kind == "user"
            and s.id is not None
            and primary is not None
            and primary.desired.password is not None
            and converger.writable
        ):
            probe = Probe(
                user_id=s.id,
                user_name=s.key.name,
                domain_id=s.parent_ids.get("domain_id", ""),
                secret=primary.desired.password,
            )
        periods = [c.resync_seconds for c in s.claims if c.resync_seconds]
        return Swept(
            key=s.key,
            workflow_id=workflow.info().workflow_id,
            id=s.id,
            digest="" if s.key.kind == "grant" else sw.digest(converger.current),
            grant=act.grant(s.key, s.parent_ids) if s.key.kind == "grant" else None,
            probe=probe,
            policy=s.policy or own.Policy(),
            period_seconds=min(periods, default=sw.DEFAULT_PERIOD_SECONDS),
        )

    async def _parents_known(self) -> bool:
        """True when every object this one depends on has an ID; else tell the claimants what is missing."""
        missing = await self.parents.missing()
        if not missing:
            return True
        await self._tell_watchers(False)  # dependents of this one: it cannot exist without its parents
        message = waiting_message(missing[0])
        await self._answer(
            {c.claimant.workflow_id: self._result(c, "waiting", message) for c in self.st.claims}
        )
        return False

    async def _release(self, converger: Converger, release: Release) -> None:
        s = self.st
        s.claims = [c for c in s.claims if c.claimant.workflow_id != release.claimant.workflow_id]
        s.results.pop(release.claimant.workflow_id, None)
        if s.claims:
            message = f"{s.key} is kept: {s.claims[0].claimant.resource} still declares it"
        elif s.policy is not None and s.policy.protected:
            message = f"{s.key} is kept: it is protected ({s.policy.reason})"
        elif s.origin != "created":
            message = f"{s.key} is kept: osprov did not create it"
        elif release.deletion_policy != "delete":
            message = f"{s.key} is kept (deletionPolicy retain)"
        elif not s.present:
            message = f"{s.key} is already gone"
        else:
            await converger.delete()
            await self._tell_watchers(True)
            message = f"deleted {s.key}"
        result = ObjectResult(
            key=s.key, seq=release.seq, outcome="released", message=message, origin=s.origin
        )
        await self._signal(release.claimant.workflow_id, result)

    # ----- answers -----------------------------------------------------------------------------
    def _result(self, claim: Claim, outcome: own.Outcome, message: str) -> ObjectResult:
        s = self.st
        return ObjectResult(
            key=s.key, seq=claim.seq, outcome=outcome, message=message, id=s.id, origin=s.origin
        )

    async def _answer(self, results: dict[str, ObjectResult]) -> None:
        """Send each claimant its result when it changed or answers a newer claim."""
        s = self.st
        for claim in list(s.claims):
            cid = claim.claimant.workflow_id
            result, sent = results.get(cid), s.results.get(cid)
            if result is None or not _news(sent, result):
                continue
            if patches.patched(PATCH_ANSWER_LOCAL):
                answer = own.Answer(workflow_id=cid, result=result)
                delivered = await call_local(own.ANSWER, answer, summary=f"answer {claim.claimant.resource}")
            else:
                delivered = await self._signal(cid, result)
            if delivered:
                s.results[cid] = result
            else:  # the claimant's workflow is gone (terminated without releasing): drop its claim
                s.claims = [c for c in s.claims if c.claimant.workflow_id != cid]
                s.results.pop(cid, None)
                self._dirty = True

    async def _tell_watchers(self, changed: bool) -> None:
        s = self.st
        new, self._new_watchers, self._tell_new = self._new_watchers, [], False
        targets = list(s.watchers) if changed else [w for w in new if w in s.watchers]
        ready = ParentReady(key=s.key, present=s.present, id=s.id if s.present else None)
        if 0 < len(targets) <= TELL_LOCAL_MAX and patches.patched(PATCH_TELL_LOCAL):
            tell = own.Tell(ready=ready, watchers=targets)
            summary = f"tell {len(targets)} dependent(s) whether {s.key} exists"
            try:
                told = await call_local(own.TELL, tell, summary=summary)
            except ACTIVITY_FAILED:  # Temporal refused: whoever was to hear it is told at the next try
                self._new_watchers = list(dict.fromkeys(targets + self._new_watchers))
                self._tell_new = True
                raise
            s.watchers = [w for w in s.watchers if w not in told.gone]
            return
        for watcher in targets:
            if not await self._signal(watcher, ready, own.SIGNAL_PARENT_READY):
                s.watchers.remove(watcher)

    async def _signal(self, workflow_id: str, arg: object, name: str = own.SIGNAL_OBJECT_RESULT) -> bool:
        try:
            await workflow.get_external_workflow_handle(workflow_id).signal(name, arg)
        except FailureError:
            return False
        return True


def _news(sent: ObjectResult | None, result: ObjectResult) -> bool:
    """Whether a claimant must hear `result`: it answers a newer claim, or what it says changed (not
    merely its wording, e.g. "created" becoming "up to date" on a later step)."""
    if sent is None or result.seq != sent.seq:
        return True
    return (result.outcome, result.id, result.origin) != (sent.outcome, sent.id, sent.origin)
