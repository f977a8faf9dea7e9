"""An in-memory Cinder for time-skipping Volume workflow tests, registered under the real activity names.

Each volume carries a script of the statuses its next reads return (`FakeVolume.script`); the last one
stays. Creates start as creating → available and deletes as deleting → gone unless the test says otherwise.
Projects exist only when added (`projects`), as Keystone would tell the real activity.
"""

from __future__ import annotations

import asyncio
import itertools
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from temporalio import activity
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from osprov.activities import errors
from osprov.activities.cinder import ONLINE_EXTEND_REFUSED, settled
from osprov.api import cinder_io as io
from osprov.workflows.all import WORKFLOWS
from tests.workflows.fakes import FakeCloud
from tests.workflows.harness import Harness

REGION = "RegionOne"
FINALIZER = "cinder.osh.openstack.org/finalizer"


@dataclass
class FakeVolume:
    id: str
    name: str
    scope: io.ProjectScope
    size: int
    status: str
    metadata: dict[str, str] = field(default_factory=dict)
    script: list[str] = field(default_factory=list)  # statuses the next reads return, in order
    deleted: bool = False  # gone after the read that consumes the script's end
    grow_to: int | None = None  # the size once the script (an accepted extend) ends in a provisioned status

    def read(self) -> io.Volume:
        if self.script:
            self.status = self.script.pop(0)
            if not self.script and self.grow_to is not None and self.status in io.PROVISIONED_STATUSES:
                self.size, self.grow_to = self.grow_to, None
        return io.Volume(
            id=self.id, name=self.name, status=self.status, size=self.size, metadata=self.metadata
        )


@dataclass
class FakeCinder:
    projects: set[tuple[str, str]] = field(default_factory=set)  # (project, domain) that exist in Keystone
    volumes: dict[str, FakeVolume] = field(default_factory=dict)
    calls: list[str] = field(default_factory=list)
    fail_next: dict[str, str] = field(default_factory=dict)  # activity -> error type
    create_script: list[str] = field(default_factory=lambda: ["creating", "available"])
    delete_script: list[str] = field(default_factory=lambda: ["deleting"])  # reads before the volume is gone
    created_types: list[str | None] = field(default_factory=list)  # volume_type of every create
    # Statuses the reads after an accepted extend return (the size changes when the script ends in a
    # provisioned status), and what Cinder ends with: "grown", or "reset" (the scheduler found no room:
    # back to the old status at the old size), or "error" (the driver failed: error_extending).
    extend_script: list[str] = field(default_factory=lambda: ["extending"])
    extend_outcome: str = "grown"
    extends_accepted: list[tuple[str, int]] = field(default_factory=list)  # (volume ID, size): Cinder's log
    online_extend: bool = True  # Cinder offers volume API 3.42 (extend while in-use)
    lost_extend_answers: int = 0  # this many accepted extends answer with a dropped connection (retried)
    # This many of the next waits last a minute of real time (Cinder slower than a test), unless cancelled.
    slow_waits: int = 0
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def add_project(self, project: str = "p", domain: str = "Default") -> io.ProjectScope:
        self.projects.add((project, domain))
        return io.ProjectScope(project=project, domain=domain)

    def add(self, name: str, scope: io.ProjectScope, status: str = "available", *script: str) -> FakeVolume:
        vol = FakeVolume(
            id=f"vol-{next(self._ids)}", name=name, scope=scope, size=1, status=status, script=list(script)
        )
        self.volumes[vol.id] = vol
        return vol

    def named(self, name: str) -> list[FakeVolume]:
        return sorted((v for v in self.volumes.values() if v.name == name), key=lambda v: v.id)

    def count(self, name: str) -> int:
        return sum(1 for c in self.calls if c == name)

    def _enter(self, name: str) -> None:
        self.calls.append(name)
        kind = self.fail_next.pop(name, None)
        if kind:
            raise errors.error(kind, f"injected {kind} for {name}")

    def _exists(self, scope: io.ProjectScope) -> bool:
        return (scope.project, scope.domain) in self.projects

    def _read(self, scope: io.ProjectScope, name: str) -> list[io.Volume]:
        found = []
        for vol in self.named(name):
            if vol.scope != scope:
                continue
            if vol.deleted and not vol.script:
                del self.volumes[vol.id]
                continue
            found.append(vol.read())
        return found

    def _read_id(self, scope: io.ProjectScope, volume_id: str) -> list[io.Volume]:
        vol = self.volumes.get(volume_id)
        if vol is None or vol.scope != scope:
            return []
        if vol.deleted and not vol.script:
            del self.volumes[vol.id]
            return []
        return [vol.read()]

    def activities(self) -> list[Any]:
        cinder = self

        @activity.defn(name=io.FIND_VOLUMES.name)
        async def find_volumes(req: io.FindVolumes) -> io.VolumeLookup:
            cinder._enter(io.FIND_VOLUMES.name)
            if not cinder._exists(req.scope):
                return io.VolumeLookup(project_found=False)
            if req.id is not None:  # by ID: the project's volume with it, whatever its name
                return io.VolumeLookup(project_found=True, volumes=cinder._read_id(req.scope, req.id))
            return io.VolumeLookup(project_found=True, volumes=cinder._read(req.scope, req.name))

        @activity.defn(name=io.AWAIT_VOLUME.name)
        async def await_volume(req: io.AwaitVolume) -> io.VolumeLookup:
            """The real activity's loop without its clock: as many reads as fit in `within_seconds`."""
            cinder._enter(io.AWAIT_VOLUME.name)
            if cinder.slow_waits > 0:
                cinder.slow_waits -= 1
                await asyncio.sleep(
                    60
                )  # the length of a slow wait, not synchronisation (cancelled at shutdown)
            for _ in range(max(1, int(req.within_seconds / req.interval_seconds))):
                if not cinder._exists(req.scope):
                    return io.VolumeLookup(project_found=False)
                lookup = io.VolumeLookup(project_found=True, volumes=cinder._read_id(req.scope, req.id))
                if settled(lookup, req.gone):
                    break
            return lookup

        @activity.defn(name=io.CREATE_VOLUME.name)
        async def create_volume(req: io.CreateVolume) -> io.Volume:
            cinder._enter(io.CREATE_VOLUME.name)
            cinder.created_types.append(req.volume_type)
            if not cinder._exists(req.scope):
                raise errors.not_found(io.project_missing(req.scope.project, req.scope.domain))
            existing = cinder._read(req.scope, req.name)
            if len(existing) > 1:
                raise errors.consistency(f"{len(existing)} Cinder volumes are named {req.name}")
            if existing:
                return existing[0]
            vol = cinder.add(req.name, req.scope, "creating", *cinder.create_script)
            vol.size = req.size
            vol.metadata = io.volume_metadata(req.tags, req.system | {"region": REGION})
            return io.Volume(
                id=vol.id, name=vol.name, status="creating", size=vol.size, metadata=vol.metadata
            )

        @activity.defn(name=io.UPDATE_METADATA.name)
        async def update_metadata(req: io.UpdateMetadata) -> bool:
            cinder._enter(io.UPDATE_METADATA.name)
            vol = cinder.volumes[req.id]
            want = io.volume_metadata(req.tags, req.system | {"region": REGION})
            kept = {k: v for k, v in vol.metadata.items() if not k.startswith(io.TAG_PREFIX) or k in want}
            vol.metadata = kept | want
            return True

        @activity.defn(name=io.EXTEND_VOLUME.name)
        async def extend_volume(req: io.ExtendVolume) -> io.Volume:
            """The real activity's rule: read first; send only for a provisioned, smaller volume."""
            cinder._enter(io.EXTEND_VOLUME.name)
            vol = cinder.volumes[req.id]
            now = vol.read()
            if now.status not in io.PROVISIONED_STATUSES or now.size >= req.size:
                return now
            if now.status == "in-use" and not cinder.online_extend:
                raise errors.conflict(ONLINE_EXTEND_REFUSED)
            cinder.extends_accepted.append((vol.id, req.size))
            back = vol.status
            vol.status = "extending"
            if cinder.extend_outcome == "grown":
                vol.script, vol.grow_to = [*cinder.extend_script, back], req.size
            elif cinder.extend_outcome == "reset":
                vol.script = [*cinder.extend_script, back]
            else:
                vol.script = [*cinder.extend_script, "error_extending"]
            if cinder.lost_extend_answers > 0:  # accepted, but the answer never arrives: Temporal retries
                cinder.lost_extend_answers -= 1
                raise errors.transient("Cinder is unreachable (RemoteDisconnected)")
            return io.Volume(
                id=vol.id, name=vol.name, status="extending", size=vol.size, metadata=vol.metadata
            )

        @activity.defn(name=io.DELETE_VOLUME.name)
        async def delete_volume(req: io.DeleteVolume) -> io.DeleteResult:
            cinder._enter(io.DELETE_VOLUME.name)
            vol = cinder.volumes.get(req.id)
            if vol is None or vol.deleted:
                return io.DeleteResult(outcome="absent")
            vol.status, vol.script, vol.deleted = "deleting", list(cinder.delete_script), True
            return io.DeleteResult(outcome="accepted")

        return [find_volumes, await_volume, create_volume, update_metadata, extend_volume, delete_volume]


class CinderHarness(Harness):
    cinder: FakeCinder

    def status(self) -> dict[str, Any]:
        return self.cloud.statuses[-1] if self.cloud.statuses else {}

    def condition(self) -> dict[str, Any]:
        return next((c for c in self.status().get("conditions", []) if c["type"] == "Available"), {})


async def cinder_harness(tenv: WorkflowEnvironment) -> AsyncIterator[CinderHarness]:
    """A worker running the production workflows against FakeCloud (Kubernetes) and FakeCinder."""
    cloud, cinder = FakeCloud(), FakeCinder()
    queue = f"q-{uuid.uuid4()}"
    async with Worker(
        tenv.client,
        task_queue=queue,
        workflows=WORKFLOWS,
        activities=cloud.activities() + cinder.activities(),
    ):
        hs = CinderHarness(tenv, cloud, queue)
        hs.cinder = cinder
        yield hs
        await hs.close()


async def replay_scenario(h: Harness, kind: str, **spec_extra: Any) -> str:
    """tests/replay scenario for Volume: create (creating → available), a resync, a tag change, delete.

    The shared harness has no Cinder, so this runs its own worker (FakeCloud + FakeCinder) beside it.
    """
    cinder = FakeCinder()
    cinder.add_project()
    queue = f"{h.queue}-cinder"
    activities = h.cloud.activities() + cinder.activities()
    async with Worker(h.env.client, task_queue=queue, workflows=WORKFLOWS, activities=activities):
        ch = CinderHarness(h.env, h.cloud, queue)
        ch.cinder = cinder
        spec = {"project": {"name": "p", "domain": "Default"}, "size": 1, "deletionPolicy": "delete"}
        spec |= spec_extra
        wf = await ch.apply(kind, spec, name="replay", uid="replay-volume")
        await ch.until(lambda: ch.condition().get("reason") == "Provisioned", "volume provisioned")
        finds = cinder.count(io.FIND_VOLUMES.name)
        await h.env.sleep(601)
        await ch.until(lambda: cinder.count(io.FIND_VOLUMES.name) > finds, "volume resynced")
        changed = spec | {"tags": {"team": "replay"}}
        await ch.signal(wf, 2, changed, finalizers=[FINALIZER])
        await ch.until(lambda: ch.status().get("observedGeneration") == 2, "generation 2")
        await ch.signal(wf, 2, changed, deleting=True, finalizers=[FINALIZER])
        await wf.result()
        return wf.id


async def extend_scenario(h: Harness, kind: str) -> str:
    """tests/replay scenario for the extend (C6, S3, S1): create at 1 GiB, grow to 2 GiB, delete."""
    cinder = FakeCinder()
    cinder.add_project()
    queue = f"{h.queue}-cinder"
    activities = h.cloud.activities() + cinder.activities()
    async with Worker(h.env.client, task_queue=queue, workflows=WORKFLOWS, activities=activities):
        ch = CinderHarness(h.env, h.cloud, queue)
        ch.cinder = cinder
        spec = {"project": {"name": "p", "domain": "Default"}, "size": 1, "deletionPolicy": "delete"}
        wf = await ch.apply(kind, spec, name="grown", uid="replay-volume-extend")
        await ch.until(lambda: ch.condition().get("reason") == "Provisioned", "volume provisioned")
        grown = spec | {"size": 2}
        await ch.signal(wf, 2, grown, finalizers=[FINALIZER])
        await ch.until(
            lambda: ch.status().get("size") == 2 and ch.status().get("observedGeneration") == 2, "2 GiB"
        )
        await ch.signal(wf, 2, grown, deleting=True, finalizers=[FINALIZER])
        await wf.result()
        return wf.id


async def observe_scenario(h: Harness, kind: str) -> str:
    """tests/replay scenario for an unmanaged Volume (O1, S1): observe an imported volume, a resync, delete."""
    cinder = FakeCinder()
    legacy = cinder.add("legacy", cinder.add_project())
    queue = f"{h.queue}-cinder"
    activities = h.cloud.activities() + cinder.activities()
    async with Worker(h.env.client, task_queue=queue, workflows=WORKFLOWS, activities=activities):
        ch = CinderHarness(h.env, h.cloud, queue)
        ch.cinder = cinder
        spec = {
            "project": {"name": "p", "domain": "Default"},
            "size": 1,
            "managementPolicy": "unmanaged",
            "import": {"id": legacy.id},
        }
        wf = await ch.apply(kind, spec, name="observed", uid="replay-volume-observe")
        await ch.until(lambda: ch.condition().get("reason") == "Provisioned", "volume observed")
        await h.env.sleep(601)
        await ch.until(lambda: cinder.count(io.FIND_VOLUMES.name) >= 2, "volume resynced")
        await ch.signal(wf, 1, spec, deleting=True)
        await wf.result()
        return wf.id
