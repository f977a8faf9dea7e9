"""Stub activities for time-skipping workflow tests: an in-memory Keystone and Kubernetes API.

They register under the real activity names, so the workflows under test are the production code.
"""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass, field
from typing import Any

from temporalio import activity

from osprov.activities import errors, keystone_sweep, ownership
from osprov.api import inventory_io
from osprov.api import keystone_io as io
from osprov.api import ownership as own
from osprov.api import sweep as sw
from osprov.api.kube_io import (
    EventRecorded,
    FinalizerChange,
    PatchStatus,
    RecordEvent,
    SecretKey,
    SecretVersion,
    WriteResult,
)
from tests.workflows.fakes_identity import FakeIdentities

# How long a call named in FakeCloud.meet waits for the other one to start (real time, not the server's).
MEET_WAIT_SECONDS = 2.0


@dataclass
class FakeCloud:
    objects: dict[str, dict[str, io.KeystoneObject]] = field(default_factory=dict)
    calls: list[str] = field(default_factory=list)
    finds: list[io.Find] = field(default_factory=list)  # every keystone.find request, in order
    creates: list[io.Create] = field(default_factory=list)  # every keystone.create request, in order
    drifted: list[str] = field(default_factory=list)  # object paths the sweep's scans found drifted
    statuses: list[dict[str, Any]] = field(default_factory=list)
    status_by_uid: dict[str, dict[str, Any]] = field(default_factory=dict)  # each resource's status now
    finalizers: list[str] = field(default_factory=list)
    events: list[RecordEvent] = field(default_factory=list)  # Events recorded (creates and series patches)
    fail_next: dict[str, str] = field(default_factory=dict)  # activity -> error type
    secrets: dict[str, str] = field(default_factory=dict)  # "ns/name/key" -> value (stays in the fake)
    passwords: dict[str, str] = field(default_factory=dict)  # user id -> password Keystone holds
    grants: set[str] = field(default_factory=set)
    # The operator policy the fake worker applies (the real one reads the environment and the controller's
    # own identity from Keystone): controller object paths -> why they are protected.
    controller: dict[str, str] = field(default_factory=dict)
    claims: list[own.Claim] = field(default_factory=list)  # every claim a resource sent, in order
    watches: list[own.Watch] = field(default_factory=list)  # every watch an object sent, in order
    lose_claims: int = 0  # the next N claims are never delivered (as to an object's workflow terminated)
    hold_claims: int = 0  # the next N claims wait in `held` until the test delivers them (an object behind)
    held: list[own.Claim] = field(default_factory=list)
    fail_wakes: int = 0  # the next N wakes of the lead sweep fail (Temporal unreachable)
    fail_watches: int = 0  # the next N watches are refused (a parent's run over a Temporal limit)
    defer_watches: int = 0  # the next N watches that read an ID are deferred (the parent is behind)
    lose_watches: int = 0  # the next N watches read no ID and are never answered (a parent far behind)
    fail_deletes: int = 0  # the next N Keystone deletes fail (Keystone unreachable)
    object_workflows: set[str] = field(
        default_factory=set
    )  # KeystoneObject workflows started (closed at the end)
    # What the region inventory publishes, as the Volume and Server checks read it (default: no inventory).
    offer: inventory_io.Offer = field(default_factory=lambda: inventory_io.Offer(enabled=False))
    offered_images: set[str] = field(default_factory=set)
    # The tenancy mapping, Identities and application credentials (fakes_identity.py).
    identity: FakeIdentities = field(default_factory=FakeIdentities)
    # Overlap probes: "<activity> <workflow ID>" -> the call it waits (up to MEET_WAIT_SECONDS) to see start;
    # `met` records whether it did. Two local activities a workflow schedules at once meet; two in turn
    # never do (the second is scheduled only once the first has returned). Finds are "keystone.find:<kind>".
    meet: dict[str, str] = field(default_factory=dict)
    met: dict[str, bool] = field(default_factory=dict)
    _started: dict[str, asyncio.Event] = field(default_factory=dict)
    _ids: itertools.count = field(default_factory=lambda: itertools.count(1))

    def add(self, kind: str, **fields: Any) -> io.KeystoneObject:
        obj = io.KeystoneObject(kind=kind, id=f"{kind}-{next(self._ids)}", fields=fields)  # type: ignore[arg-type]
        self.objects.setdefault(kind, {})[obj.id] = obj
        return obj

    def of(self, kind: str) -> list[io.KeystoneObject]:
        return sorted(self.objects.get(kind, {}).values(), key=lambda o: o.id)

    def reasons(self, uid: str | None = None) -> list[str]:
        """The reasons of the Events recorded (about one resource), in order; a series repeat counts again."""
        return [e.event.reason for e in self.events if uid is None or e.obj.uid == uid]

    def count(self, name: str) -> int:
        return sum(1 for c in self.calls if c == name)

    async def _arrive(self, name: str) -> None:
        """A call starts: tell whoever waits for it, and wait for the call `meet` names (the first time)."""
        label = f"{name} {activity.info().workflow_id}"
        self._started.setdefault(label, asyncio.Event()).set()
        other = self.meet.get(label)
        if other is None or label in self.met:
            return
        try:
            await asyncio.wait_for(self._started.setdefault(other, asyncio.Event()).wait(), MEET_WAIT_SECONDS)
            self.met[label] = True
        except TimeoutError:
            self.met[label] = False

    def _maybe_fail(self, name: str) -> None:
        kind = self.fail_next.pop(name, None)
        if kind:
            raise errors.error(kind, f"injected {kind} for {name}")

    def activities(self) -> list[Any]:
        cloud = self

        @activity.defn(name=io.FIND.name)
        async def find(req: io.Find) -> list[io.KeystoneObject]:
            cloud.calls.append(io.FIND.name)
            cloud.finds.append(req)
            await cloud._arrive(f"{io.FIND.name}:{req.kind}")
            cloud._maybe_fail(io.FIND.name)
            want = req.effective_filters()
            return [
                o
                for o in cloud.of(req.kind)
                if all(str(o.fields.get(k) if k != "id" else o.id) == v for k, v in want.items())
            ]

        @activity.defn(name=io.CREATE.name)
        async def create(req: io.Create) -> io.KeystoneObject:
            cloud.calls.append(io.CREATE.name)
            cloud.creates.append(req)
            cloud._maybe_fail(io.CREATE.name)
            existing = await find(req.find)
            cloud.calls.pop()
            return existing[0] if existing else cloud.add(req.kind, **req.fields)

        @activity.defn(name=io.UPDATE.name)
        async def update(req: io.Update) -> io.KeystoneObject:
            cloud.calls.append(io.UPDATE.name)
            old = cloud.objects[req.kind][req.id]
            new = io.KeystoneObject(kind=old.kind, id=old.id, fields=old.fields | req.fields)
            cloud.objects[req.kind][req.id] = new
            return new

        @activity.defn(name=io.DELETE.name)
        async def delete(req: io.Delete) -> bool:
            cloud.calls.append(io.DELETE.name)
            if cloud.fail_deletes > 0:
                cloud.fail_deletes -= 1
                raise errors.transient(f"injected outage for {io.DELETE.name}")
            return cloud.objects.get(req.kind, {}).pop(req.id, None) is not None

        @activity.defn(name="kube.patch_status")
        async def patch_status(req: PatchStatus) -> WriteResult:
            cloud.calls.append("kube.patch_status")
            cloud.statuses.append(req.status)
            merged = cloud.status_by_uid.get(req.obj.uid, {}) | req.status  # a JSON merge patch, top level
            cloud.status_by_uid[req.obj.uid] = {k: v for k, v in merged.items() if v is not None}
            return WriteResult(exists=True, changed=True)

        @activity.defn(name="kube.record_event")
        async def record_event(req: RecordEvent) -> EventRecorded:
            cloud.events.append(req)
            return EventRecorded(recorded=True)

        @activity.defn(name="kube.add_finalizer")
        async def add_finalizer(req: FinalizerChange) -> WriteResult:
            cloud.calls.append("kube.add_finalizer")
            cloud._maybe_fail("kube.add_finalizer")
            cloud.finalizers.append(req.finalizer)
            return WriteResult(exists=True, changed=True)

        @activity.defn(name="kube.remove_finalizer")
        async def remove_finalizer(req: FinalizerChange) -> WriteResult:
            cloud.calls.append("kube.remove_finalizer")
            if req.finalizer in cloud.finalizers:
                cloud.finalizers.remove(req.finalizer)
            return WriteResult(exists=True, changed=True)

        def secret_value(ref: io.SecretRef | SecretKey) -> str:
            value = cloud.secrets.get(f"{ref.namespace}/{ref.name}/{ref.key}")
            if value is None:
                raise errors.not_found(f"Secret {ref.namespace}/{ref.name} has no key {ref.key}")
            return value

        @activity.defn(name="kube.check_secret")
        async def check_secret(req: SecretKey) -> SecretVersion:
            cloud.calls.append("kube.check_secret")
            secret_value(req)
            return SecretVersion(resource_version="1")

        @activity.defn(name=io.PROBE_PASSWORD.name)
        async def probe_password(req: io.Probe) -> io.ProbeResult:
            cloud.calls.append(io.PROBE_PASSWORD.name)
            ok = cloud.passwords.get(req.user_id) == secret_value(req.secret)
            return io.ProbeResult(outcome="valid" if ok else "unauthorized")

        @activity.defn(name=io.SET_PASSWORD.name)
        async def set_password(req: io.SetPassword) -> None:
            cloud.calls.append(io.SET_PASSWORD.name)
            cloud.passwords[req.user_id] = secret_value(req.secret)

        def grant_key(g: io.Grant) -> str:
            return g.model_dump_json()

        @activity.defn(name=io.CHECK_GRANT.name)
        async def check_grant(req: io.Grant) -> bool:
            cloud.calls.append(io.CHECK_GRANT.name)
            return grant_key(req) in cloud.grants

        @activity.defn(name=io.PUT_GRANT.name)
        async def put_grant(req: io.Grant) -> None:
            cloud.calls.append(io.PUT_GRANT.name)
            cloud.grants.add(grant_key(req))

        @activity.defn(name=io.REVOKE_GRANT.name)
        async def revoke_grant(req: io.Grant) -> bool:
            cloud.calls.append(io.REVOKE_GRANT.name)
            present = grant_key(req) in cloud.grants
            cloud.grants.discard(grant_key(req))
            return present

        @activity.defn(name=own.POLICY.name)
        async def policy(req: own.ObjectKey) -> own.Policy:
            cloud.calls.append(own.POLICY.name)
            await cloud._arrive(own.POLICY.name)
            cloud._maybe_fail(own.POLICY.name)
            return ownership.policy_for(req, cloud.controller)

        @activity.defn(name=own.CLAIM.name)
        async def claim(req: own.Claim) -> None:
            cloud.claims.append(req)
            if cloud.lose_claims > 0:
                cloud.lose_claims -= 1
                return
            if cloud.hold_claims > 0:
                cloud.hold_claims -= 1
                cloud.held.append(req)
                return
            cloud.object_workflows.add(req.key.workflow_id(req.keystone, activity.info().task_queue))
            await ownership.claim(req)

        @activity.defn(name=own.WATCH.name)
        async def watch(req: own.Watch) -> own.WatchAnswer | None:
            if cloud.fail_watches > 0:
                cloud.fail_watches -= 1
                raise errors.transient("cannot reach the workflow of the parent: INVALID_ARGUMENT")
            cloud.object_workflows.add(req.key.workflow_id(req.keystone, activity.info().task_queue))
            cloud.watches.append(req)
            if cloud.lose_watches > 0:
                cloud.lose_watches -= 1
                return None
            if cloud.defer_watches > 0:
                known, _ = await ownership._read_parent(req.keystone, req.key)
                if known is not None:  # what the real watch answers when the parent's run is too long
                    cloud.defer_watches -= 1
                    return known.model_copy(update={"registered": False})
            return await ownership.watch(req)

        @activity.defn(name=sw.REPORT.name)
        async def sweep_report(req: sw.Report) -> None:
            queue = activity.info().task_queue
            cloud.object_workflows.add(
                sw.shard_workflow_id(req.keystone, queue, sw.shard_of(req.swept.key.path))
            )
            await keystone_sweep.report(req)

        @activity.defn(name=sw.WAKE.name)
        async def sweep_wake(req: sw.Wake) -> None:
            if cloud.fail_wakes > 0:
                cloud.fail_wakes -= 1
                raise errors.transient("cannot reach the drift scan (the fake's outage)")
            cloud.object_workflows.add(sw.workflow_id(req.keystone, activity.info().task_queue))
            await keystone_sweep.wake(req)

        @activity.defn(name=sw.SCAN.name)
        async def scan(req: sw.Scan) -> sw.ScanResult:
            """The real scan's comparison, against this fake Keystone (the reports read the real way)."""
            cloud.calls.append(sw.SCAN.name)
            located, stale = await keystone_sweep.read_reports(activity.client(), req)
            drifted = []
            for x, _ in located.values():
                reason = None
                if x.grant is not None:
                    reason = None if grant_key(x.grant) in cloud.grants else "grant missing"
                else:
                    obj = cloud.objects.get(x.key.kind, {}).get(x.id or "")
                    if obj is None:
                        reason = "deleted"
                    elif sw.digest(dict(obj.fields)) != x.digest:
                        reason = "fields changed"
                if reason is None and ownership.policy_for(x.key, cloud.controller) != x.policy:
                    reason = "the operator's policy changed"
                probe = x.probe
                if (
                    reason is None
                    and probe
                    and cloud.passwords.get(probe.user_id) != secret_value(probe.secret)
                ):
                    reason = "password changed"
                if reason is not None:
                    drifted.append(sw.Drift(path=x.key.path, reason=reason))
                    cloud.drifted.append(x.key.path)
            drifted = keystone_sweep.locate(drifted, located)
            periods = keystone_sweep.periods(located)
            return sw.ScanResult(checked=len(located), drifted=drifted, stale=stale, periods=periods)

        @activity.defn(name=inventory_io.OFFERED_IMAGE.name)
        async def offered_image(req: inventory_io.OfferQuery) -> inventory_io.Offer:
            cloud.calls.append(inventory_io.OFFERED_IMAGE.name)
            return cloud.offer.model_copy(update={"image_offered": req.image_id in cloud.offered_images})

        @activity.defn(name=inventory_io.OFFERED_VOLUME_CLASSES.name)
        async def offered_volume_classes(req: inventory_io.OfferQuery) -> inventory_io.Offer:
            cloud.calls.append(inventory_io.OFFERED_VOLUME_CLASSES.name)
            return cloud.offer

        return [
            offered_image,
            offered_volume_classes,
            claim,
            watch,
            ownership.release,
            ownership.unwatch,
            ownership.answer,
            ownership.tell_watchers,
            sweep_report,
            sweep_wake,
            keystone_sweep.forget,
            scan,
            policy,
            find,
            create,
            update,
            delete,
            patch_status,
            record_event,
            add_finalizer,
            remove_finalizer,
            check_secret,
            probe_password,
            set_password,
            check_grant,
            put_grant,
            revoke_grant,
            *cloud.identity.activities(),
        ]
