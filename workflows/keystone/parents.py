"""The objects a Keystone object depends on (its parents): their IDs, the watches that bring them, and the
registrations still owed to a parent that was busy. Part of KeystoneObjectWorkflow (objects.py), which
calls it from its handlers and its step.

A parent answers a watch at once (it exists, or not yet) and again whenever that changes, so a missing
dependency wakes the object when it appears instead of being polled. A parent whose memo holds its ID
answers without a signal (activities/ownership.py watch); one far past its run's bound defers the watch
(api/ownership.py defers_watch): the dependent uses the ID it read and registers later, on a backoff.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from datetime import datetime, timedelta

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from osprov.api import ownership as own
    from osprov.api.ownership import ObjectKey, ObjectState, ParentReady, Watch, WatchAnswer
    from osprov.workflows import patches
    from osprov.workflows.calls import call_local
    from osprov.workflows.entity import ACTIVITY_FAILED
    from osprov.workflows.keystone import actuators as act

# A parent answers a watch within one workflow task; longer means it is stuck (Keystone down): the
# claimants are told "waiting" and the parent's answer, when it comes, wakes this object.
PARENT_ANSWER_TIMEOUT = timedelta(seconds=30)
# The parents' answers to a step's own watch end that step's wait; before, each answer also marked the
# object dirty, so every new object ran a second step (one more Keystone read) right after its first.
PATCH_ANSWER_ENDS_WAIT = "keystone-parent-answer-ends-wait"
# A parent behind on its tasks defers a dependent's watch (api/ownership.py defers_watch); the dependent
# uses the ID it read and registers again on this backoff, jittered ±50 %. Thousands are deferred at once
# and each try is a workflow task on a worker already saturated: at 10,000 a first try after a minute
# added a task per deferred dependent per minute or two to the backlog that delayed everyone else. Until
# it registers, a change of the parent's ID reaches it when its own next step finds the ID stale.
REGISTER_FIRST, REGISTER_MAX = 600.0, 3600.0
# A parent that does not answer a watch in PARENT_ANSWER_TIMEOUT is asked again on that backoff too.
PATCH_REASK_UNANSWERED = "keystone-object-reasks-unanswered"


class Parents:
    """One object's side of its parents' watches. `state` and `desired` read the workflow's current
    ownership record and the declaration that decides which parents it has."""

    def __init__(self, state: Callable[[], ObjectState], desired: Callable[[], own.Desired | None]) -> None:
        self._state, self._desired = state, desired
        self._watching: set[str] = set()  # parents asked (this run) to tell us about themselves
        self._answers: dict[str, ParentReady] = {}  # path -> a parent's latest answer
        self._asking: set[str] = set()  # parents whose answer the running step waits for (and consumes)
        self._register_at: datetime | None = None  # when to register with the parents that deferred us
        self._register_tries = 0

    # ----- answers ------------------------------------------------------------------------------
    def answered(self, ready: ParentReady) -> bool:
        """A parent's answer (signal parent_ready); True when it needs a step of its own (the running
        step waits for the answers to its own watches)."""
        s = self._state()
        self.take(ready)
        if ready.key in s.unregistered:  # it answered: registered
            s.unregistered.remove(ready.key)
        return ready.key.path not in self._asking

    def take(self, ready: ParentReady) -> None:
        s = self._state()
        self._answers[ready.key.path] = ready
        for field, parent in act.parents(s.key, self._desired()).items():
            if parent == ready.key:
                if ready.present and ready.id:
                    s.parent_ids[field] = ready.id
                else:
                    s.parent_ids.pop(field, None)

    # ----- asking -------------------------------------------------------------------------------
    async def missing(self) -> list[ObjectKey]:
        """The parents still without an ID once those not yet asked have been asked (and waited for, up
        to PARENT_ANSWER_TIMEOUT); empty when every one is known."""
        s = self._state()
        needed = act.parents(s.key, self._desired())
        for field in [f for f in s.parent_ids if f not in needed]:
            del s.parent_ids[field]
        missing = {f: k for f, k in needed.items() if f not in s.parent_ids}
        asked = [k for k in missing.values() if k.path not in self._watching]
        read = 0
        for key in asked:
            self._watching.add(key.path)
            try:
                known = await self._watch(
                    key, f"ask {key} for its ID (and to wake this object when it exists)"
                )
            except ACTIVITY_FAILED:
                self._watching.discard(key.path)  # not registered: the step taken again asks again
                raise
            if known is not None:  # read from its record: no answer to wait for
                self.take(known)
                read += 1
                if not known.registered:  # the parent is behind: use its ID, register later
                    self._watching.discard(key.path)
                    self.owe(key)
                    continue
            if key in s.unregistered:
                s.unregistered.remove(key)
        if read < len(asked):  # runs recorded before the read always wait here (their watches said None)
            if patches.patched(PATCH_ANSWER_ENDS_WAIT):
                self._asking = {k.path for k in asked}
            try:
                with contextlib.suppress(TimeoutError):
                    await workflow.wait_condition(
                        lambda: all(k.path in self._answers for k in asked),
                        timeout=PARENT_ANSWER_TIMEOUT,
                        timeout_summary="wait for the dependencies to say whether they exist",
                    )
            finally:
                self._asking = set()
            self._reask_unanswered(asked)
        return [k for f, k in needed.items() if f not in s.parent_ids]

    async def _watch(self, key: ObjectKey, summary: str) -> WatchAnswer | None:
        s = self._state()
        watch = Watch(keystone=s.keystone, watcher=workflow.info().workflow_id, key=key)
        answer: WatchAnswer | None = await call_local(own.WATCH, watch, summary=summary)
        return answer

    def _reask_unanswered(self, asked: list[ObjectKey]) -> None:
        """A parent that has not answered within PARENT_ANSWER_TIMEOUT is asked again on the registration
        backoff. Before, only its answer could wake this object: a domain whose task fell behind on a
        saturated worker left a group waiting 50 minutes (its watch had found no ID in the memo, the
        describe being slow), though the memo had held the ID all along."""
        unanswered = [k for k in asked if k.path not in self._answers]
        if unanswered and patches.patched(PATCH_REASK_UNANSWERED):
            for key in unanswered:
                self._watching.discard(key.path)
                self.owe(key)

    # ----- registering with a parent that deferred our watch -----------------------------------
    def owe(self, key: ObjectKey | None = None) -> None:
        """Record a registration owed to `key` (None: the debts carried by continue-as-new)."""
        s = self._state()
        owed = bool(s.unregistered)
        if key is not None and key not in s.unregistered:
            s.unregistered.append(key)
        if not owed:  # a new debt starts the backoff afresh (a time left from one answers paid is stale)
            self._register_tries = 0
        if self._register_at is None or not owed:
            self._schedule()

    def _schedule(self) -> None:
        delay = min(REGISTER_FIRST * 2.0**self._register_tries, REGISTER_MAX)
        delay *= workflow.random().uniform(0.5, 1.5)  # deterministic (replayed from the run's seed)
        self._register_at = workflow.now() + timedelta(seconds=delay)

    def register_in(self) -> float | None:
        """Seconds until the registrations owed are due (None: none owed)."""
        if not self._state().unregistered or self._register_at is None:
            return None
        return max((self._register_at - workflow.now()).total_seconds(), 1.0)

    async def register(self) -> bool:
        """Watch again each parent that deferred our watch or did not answer it; True when a parent's ID
        changed (a step is due). A parent whose memo holds no ID is asked by signal, and stays owed until
        it answers."""
        s = self._state()
        before = dict(s.parent_ids)
        for key in list(s.unregistered):
            try:
                known = await self._watch(key, f"register with {key} (it was busy)")
            except ACTIVITY_FAILED:
                continue  # asked again on the backoff
            if known is not None and not known.registered:
                continue
            self._watching.add(key.path)
            if known is None:
                continue  # the watch went as a signal: the parent's answer (answered) ends the debt
            s.unregistered.remove(key)
            self.take(known)
        self._register_tries = self._register_tries + 1 if s.unregistered else 0
        self._register_at = None
        if s.unregistered:
            self._schedule()
        return s.parent_ids != before


def waiting_message(parent: ObjectKey) -> str:
    """What the claimants of an object are told while `parent` (the first one missing) does not exist."""
    where = (
        f" in domain {parent.domain!r}"
        if parent.domain
        else f" of type {parent.type!r}"
        if parent.type
        else ""
    )
    return (
        f"{parent.kind} {parent.name!r}{where} does not exist in Keystone yet; create it (for example with a "
        f"{parent.kind.capitalize()} resource) — osprov continues as soon as it exists"
    )
