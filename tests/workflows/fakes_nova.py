"""An in-memory Nova for time-skipping Server workflow tests, registered under the real activity names.

Reads are scripted by the test: it mutates `FakeNova.servers` (status, image, task_state, launched_at) to
stand for what Nova would show, and chooses what the next rebuild submit does (`submit_outcomes`).
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal

from temporalio import activity

from osprov.activities import errors
from osprov.api import errors as api_errors
from osprov.api import nova_io as io

BOOTED = "2026-01-01T00:00:00.000000"
# accept: Nova accepts (ref flips with task_state); conflict: 409; lost_accepted: accepted, but the
# answer never arrives (UnknownOutcome); lost: the request never reached Nova (UnknownOutcome).
SubmitOutcome = Literal["accept", "conflict", "lost_accepted", "lost"]
FLAVORS = {"1": "m1.tiny", "2": "m1.small", "3": "m1.medium"}  # ID -> name


@dataclass
class FakeServer:
    id: str
    name: str
    image_id: str | None
    status: str = "BUILD"
    task_state: str | None = "spawning"
    launched_at: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    foreign: bool = False  # another project's server: found by ID only with admin eyes, never imported
    flavor: str = "m1.tiny"
    actions: list[str] = field(default_factory=list)  # Nova's instance actions: resize, confirmResize
    resizing_to: str | None = None  # the flavor of an accepted resize, until finish_resize()

    def read(self) -> io.ServerRead:
        return io.ServerRead(
            id=self.id,
            name=self.name,
            status=self.status,
            image_id=self.image_id,
            task_state=self.task_state,
            launched_at=self.launched_at,
            mac_address="fa:16:3e:00:00:01" if self.status == "ACTIVE" else None,
            metadata=dict(self.metadata),
            flavor=self.flavor,
        )

    def finish_resize(self) -> None:
        """Nova's compute side of an accepted resize: VERIFY_RESIZE with the new flavor."""
        assert self.resizing_to is not None
        self.status, self.task_state, self.flavor = "VERIFY_RESIZE", None, self.resizing_to

    def resize_outside(self, flavor: str) -> None:
        """Someone else's resize (not osprov's): it waits in VERIFY_RESIZE."""
        self.actions.append("resize")
        self.status, self.task_state, self.flavor = "VERIFY_RESIZE", None, flavor

    def boot(self) -> None:
        self.status, self.task_state = "ACTIVE", None
        self.launched_at = self.launched_at or BOOTED

    def settle(self) -> None:
        self.status, self.task_state = "ACTIVE", None


@dataclass
class FakeNova:
    servers: dict[str, FakeServer] = field(default_factory=dict)
    calls: list[str] = field(default_factory=list)
    submits: list[str] = field(default_factory=list)  # image of every rebuild POST sent
    accepted: list[str] = field(default_factory=list)  # image of every rebuild Nova accepted
    submit_outcomes: list[SubmitOutcome] = field(default_factory=list)  # default: accept
    resize_outcomes: list[SubmitOutcome] = field(default_factory=list)  # default: accept
    confirm_outcomes: list[SubmitOutcome] = field(default_factory=list)  # default: accept
    resizes: list[str] = field(default_factory=list)  # flavor of every resize POST sent
    confirms: int = 0  # confirmResize POSTs sent
    boot_on_create: bool = True  # created servers are ACTIVE (booted) at once
    settle_in_wait: bool = (
        False  # an await finds a build or an accepted rebuild done (Nova finished meanwhile)
    )
    vanish_on_delete: bool = True
    # Volume resource name -> (server ID it is attached to, device); absent name = no such Volume.
    volumes: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)
    creates: list[io.CreateServer] = field(default_factory=list)  # every create request, as sent
    preflight_missing: list[str] = field(default_factory=list)  # what Placement says the pinned node lacks
    preflights: list[io.PlacementPreflight] = field(default_factory=list)
    baremetal: io.BaremetalProgress = field(default_factory=io.BaremetalProgress)  # default: not baremetal
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def add(self, name: str, image_id: str, *, booted: bool = True) -> FakeServer:
        server = FakeServer(id=f"srv-{next(self._ids)}", name=name, image_id=image_id)
        if booted:
            server.boot()
        self.servers[server.id] = server
        return server

    def only(self) -> FakeServer:
        [server] = self.servers.values()
        return server

    def count(self, name: str) -> int:
        return sum(1 for c in self.calls if c == name)

    def activities(self) -> list[Any]:
        nova = self

        def named(name: str) -> list[FakeServer]:
            return sorted((s for s in nova.servers.values() if s.name == name), key=lambda s: s.id)

        @activity.defn(name=io.FIND_SERVER.name)
        async def find_server(req: io.FindServer) -> list[io.ServerRead]:
            nova.calls.append(io.FIND_SERVER.name)
            return [s.read() for s in named(req.name)]

        @activity.defn(name=io.GET_SERVER.name)
        async def get_server(req: io.ServerId) -> io.ServerLookup:
            nova.calls.append(io.GET_SERVER.name)
            server = nova.servers.get(req.server_id)
            return io.ServerLookup(server=server.read() if server else None)

        @activity.defn(name=io.AWAIT_SERVER.name)
        async def await_server(req: io.AwaitServer) -> io.ServerLookup:
            """The real activity without its clock: Nova's state changes only when a test says so, so one
            read stands for a wait that ran out (or found it settled)."""
            nova.calls.append(io.AWAIT_SERVER.name)
            server = nova.servers.get(req.server.server_id)
            if server is not None and nova.settle_in_wait and server.status in ("BUILD", "REBUILD"):
                server.boot()
            return io.ServerLookup(server=server.read() if server else None)

        @activity.defn(name=io.FIND_IMPORTED_SERVER.name)
        async def find_imported_server(req: io.FindImportedServer) -> list[io.ServerRead]:
            nova.calls.append(io.FIND_IMPORTED_SERVER.name)
            if req.name is not None:
                found = named(req.name)
            else:
                found = [nova.servers[req.server_id]] if req.server_id in nova.servers else []
            return [s.read() for s in found if not s.foreign]

        @activity.defn(name=io.CREATE_SERVER.name)
        async def create_server(req: io.CreateServer) -> io.ServerRead:
            nova.calls.append(io.CREATE_SERVER.name)
            nova.creates.append(req)
            existing = named(req.name)
            if existing:
                return existing[0].read()
            server = nova.add(req.name, req.image_id, booted=nova.boot_on_create)
            server.metadata = dict(req.metadata)
            server.flavor = FLAVORS.get(req.flavor, req.flavor)
            return server.read()

        @activity.defn(name=io.PLACEMENT_PREFLIGHT.name)
        async def placement_preflight(req: io.PlacementPreflight) -> io.PreflightResult:
            nova.calls.append(io.PLACEMENT_PREFLIGHT.name)
            nova.preflights.append(req)
            return io.PreflightResult(missing=list(nova.preflight_missing))

        @activity.defn(name=io.BAREMETAL_PROGRESS.name)
        async def baremetal_progress(req: io.BaremetalQuery) -> io.BaremetalProgress:
            nova.calls.append(io.BAREMETAL_PROGRESS.name)
            return nova.baremetal

        @activity.defn(name=io.DELETE_SERVER.name)
        async def delete_server(req: io.ServerId) -> bool:
            nova.calls.append(io.DELETE_SERVER.name)
            if req.server_id not in nova.servers:
                return False
            if nova.vanish_on_delete:
                del nova.servers[req.server_id]
            else:
                nova.servers[req.server_id].task_state = "deleting"
            return True

        @activity.defn(name=io.SET_METADATA.name)
        async def set_metadata(req: io.SetMetadata) -> None:
            nova.calls.append(io.SET_METADATA.name)
            nova.servers[req.server_id].metadata.update(req.metadata)

        @activity.defn(name=io.REBUILD.name)
        async def rebuild(req: io.Rebuild) -> None:
            nova.calls.append(io.REBUILD.name)
            nova.submits.append(req.image_id)
            outcome = nova.submit_outcomes.pop(0) if nova.submit_outcomes else "accept"
            server = nova.servers[req.server_id]
            if outcome == "conflict":
                raise errors.conflict("rebuild: Nova reports a conflict")
            if outcome in ("accept", "lost_accepted"):
                # Nova flips the ref atomically with task_state at accept.
                server.image_id, server.status, server.task_state = req.image_id, "REBUILD", "rebuilding"
                nova.accepted.append(req.image_id)
            if outcome.startswith("lost"):
                raise errors.error(api_errors.UNKNOWN_OUTCOME, "rebuild: no answer from Nova")

        @activity.defn(name=io.FLAVOR_NAME.name)
        async def flavor_name(req: io.FlavorRef) -> str:
            nova.calls.append(io.FLAVOR_NAME.name)
            if req.flavor in FLAVORS.values():
                return req.flavor
            if req.flavor in FLAVORS:
                return FLAVORS[req.flavor]
            raise errors.error("Invalid", f"flavor {req.flavor!r} does not exist in Nova")

        @activity.defn(name=io.RESIZE_ACTIONS.name)
        async def resize_actions(req: io.ServerId) -> io.ResizeActions:
            nova.calls.append(io.RESIZE_ACTIONS.name)
            acts = nova.servers[req.server_id].actions
            return io.ResizeActions(resizes=acts.count("resize"), confirms=acts.count("confirmResize"))

        @activity.defn(name=io.RESIZE.name)
        async def resize(req: io.Resize) -> None:
            nova.calls.append(io.RESIZE.name)
            nova.resizes.append(req.flavor)
            outcome = nova.resize_outcomes.pop(0) if nova.resize_outcomes else "accept"
            server = nova.servers[req.server_id]
            if outcome == "conflict":
                raise errors.conflict("resize: Nova reports a conflict")
            if outcome in ("accept", "lost_accepted"):
                server.actions.append("resize")  # recorded with task_state at accept
                server.status, server.task_state, server.resizing_to = "RESIZE", "resize_prep", req.flavor
            if outcome.startswith("lost"):
                raise errors.error(api_errors.UNKNOWN_OUTCOME, "resize: no answer from Nova")

        @activity.defn(name=io.CONFIRM_RESIZE.name)
        async def confirm_resize(req: io.ServerId) -> None:
            nova.calls.append(io.CONFIRM_RESIZE.name)
            nova.confirms += 1
            outcome = nova.confirm_outcomes.pop(0) if nova.confirm_outcomes else "accept"
            server = nova.servers[req.server_id]
            if outcome == "conflict":
                raise errors.conflict("confirm resize: Nova reports a conflict")
            if outcome in ("accept", "lost_accepted"):
                server.actions.append("confirmResize")
                server.status, server.resizing_to = "ACTIVE", None
            if outcome.startswith("lost"):
                raise errors.error(api_errors.UNKNOWN_OUTCOME, "confirm resize: no answer from Nova")

        @activity.defn(name=io.ATTACH_VOLUME.name)
        async def attach_volume(req: io.VolumeAttachment) -> io.AttachResult:
            nova.calls.append(io.ATTACH_VOLUME.name)
            if req.volume not in nova.volumes:
                raise errors.not_found(f"attach Volume {req.volume}: the Volume has no Cinder volume (yet)")
            server, device = nova.volumes[req.volume]
            if server not in (None, req.server_id):
                raise errors.conflict(
                    f"attach Volume {req.volume}: attached to another server (no multi-attach)"
                )
            if server is None:
                device = req.device or f"/dev/vd{chr(ord('b') + len(nova.volumes) - 1)}"
                nova.volumes[req.volume] = (req.server_id, device)
            return io.AttachResult(device=device)

        @activity.defn(name=io.DETACH_VOLUME.name)
        async def detach_volume(req: io.VolumeAttachment) -> None:
            nova.calls.append(io.DETACH_VOLUME.name)
            if nova.volumes.get(req.volume, (None, None))[0] == req.server_id:
                nova.volumes[req.volume] = (None, None)

        return [
            await_server,
            find_server,
            find_imported_server,
            get_server,
            create_server,
            delete_server,
            placement_preflight,
            baremetal_progress,
            set_metadata,
            rebuild,
            flavor_name,
            resize_actions,
            resize,
            confirm_resize,
            attach_volume,
            detach_volume,
        ]


async def replay_scenario(h: Any, kind: str, nova: FakeNova | None = None) -> str:
    """tests/replay scenario for Server: create, an image change rebuilt and settled, then a slow delete.

    The shared harness has no Nova, so this runs its own worker (FakeCloud + FakeNova) beside it.
    """
    from temporalio.worker import Worker

    from osprov.workflows.all import WORKFLOWS
    from tests.workflows.test_server_workflow import ServerHarness, spec

    nova = nova or FakeNova()
    queue = f"{h.queue}-nova"
    async with Worker(
        h.env.client,
        task_queue=queue,
        workflows=WORKFLOWS,
        activities=h.cloud.activities() + nova.activities(),
    ):
        sh = ServerHarness(h.env, h.cloud, queue)
        sh.nova = nova
        finalizers = ["nova.osh.openstack.org/finalizer"]
        wf = await sh.apply(kind, spec("img-a"), name="replay", uid="replay-server")
        await sh.until(lambda: sh.condition().get("status") == "True", "server available")
        await sh.signal(wf, 2, spec("img-b"), finalizers=finalizers)
        await sh.until(lambda: nova.accepted == ["img-b"], "rebuild accepted")
        if not nova.settle_in_wait:
            nova.only().settle()
        await sh.until(
            lambda: sh.status().get("observedGeneration") == 2 and sh.condition()["status"] == "True",
            "rebuild settled",
        )
        nova.vanish_on_delete = False  # Nova deletes asynchronously: the finalizer shows Phase Deleting
        await sh.signal(wf, 2, spec("img-b"), deleting=True, finalizers=finalizers)
        await sh.until(lambda: sh.status().get("phase") == "Deleting", "phase Deleting")
        nova.servers.clear()
        await wf.result()
        return str(wf.id)


async def settled_read_scenario(h: Any, kind: str) -> str:
    """The rebuild's wait finds Nova done: its last read is the next pass's read, taken at once (no timer,
    no second GET: PATCH_SETTLED_READ)."""
    nova = FakeNova(settle_in_wait=True)
    return await replay_scenario(h, kind, nova)


async def observe_scenario(h: Any, kind: str) -> str:
    """tests/replay scenario for an unmanaged Server (O1, OS3, OS1): an imported server seen BUILD, then
    ACTIVE, a monitor read, the resource deleted (the server stays)."""
    from temporalio.worker import Worker

    from osprov.workflows.all import WORKFLOWS
    from tests.workflows.test_server_workflow import ServerHarness

    nova = FakeNova()
    theirs = nova.add("legacy", "img-a", booted=False)
    queue = f"{h.queue}-nova"
    activities = h.cloud.activities() + nova.activities()
    async with Worker(h.env.client, task_queue=queue, workflows=WORKFLOWS, activities=activities):
        sh = ServerHarness(h.env, h.cloud, queue)
        sh.nova = nova
        spec = {
            "project": {"name": "p", "domain": "Default"},
            "flavor": "m1.tiny",
            "imageID": "img-a",
            "managementPolicy": "unmanaged",
            "import": {"id": theirs.id},
        }
        wf = await sh.apply(kind, spec, name="observed", uid="replay-server-observe")
        await sh.until(lambda: sh.condition().get("reason") == "Provisioning", "server observed BUILD")
        theirs.boot()
        await sh.until(lambda: sh.condition().get("status") == "True", "server observed ACTIVE")
        reads = nova.count(io.FIND_IMPORTED_SERVER.name)
        await sh.until(lambda: nova.count(io.FIND_IMPORTED_SERVER.name) > reads, "monitor read")
        await sh.signal(wf, 1, spec, deleting=True)
        await wf.result()
        return str(wf.id)


async def resize_scenario(h: Any, kind: str) -> str:
    """tests/replay scenario for a resize (patch server-resize): created m1.tiny, resized to m1.small with its
    answer lost (attributed by the action count), VERIFY_RESIZE confirmed, a monitor read, then deleted."""
    from temporalio.worker import Worker

    from osprov.workflows.all import WORKFLOWS
    from tests.workflows.test_server_workflow import ServerHarness, spec

    nova = FakeNova(resize_outcomes=["lost_accepted"])
    queue = f"{h.queue}-nova"
    activities = h.cloud.activities() + nova.activities()
    async with Worker(h.env.client, task_queue=queue, workflows=WORKFLOWS, activities=activities):
        sh = ServerHarness(h.env, h.cloud, queue)
        sh.nova = nova
        finalizers = ["nova.osh.openstack.org/finalizer"]
        wf = await sh.apply(kind, spec("img-a"), name="resized", uid="replay-server-resize")
        await sh.until(lambda: sh.condition().get("status") == "True", "server available")
        await sh.signal(wf, 2, spec("img-a", flavor="m1.small"), finalizers=finalizers)
        await sh.until(
            lambda: (sh.status().get("resize") or {}).get("state") == "Resizing", "resize attributed"
        )
        nova.only().finish_resize()
        await sh.until(lambda: (sh.status().get("resize") or {}).get("state") == "Confirmed", "confirmed")
        await sh.until(lambda: sh.condition()["status"] == "True", "available again")
        reads = nova.count(io.GET_SERVER.name)
        await sh.until(lambda: nova.count(io.GET_SERVER.name) > reads, "monitor read")
        await sh.signal(wf, 2, spec("img-a", flavor="m1.small"), deleting=True, finalizers=finalizers)
        await wf.result()
        return str(wf.id)


@contextlib.asynccontextmanager
async def nova_harness(env: Any, cloud: Any, queue: str) -> AsyncIterator[Any]:
    """A worker running the production workflows against `cloud` (FakeCloud) and a new FakeNova on `queue`;
    yields the ServerHarness (its `nova` is that FakeNova)."""
    from temporalio.worker import Worker

    from osprov.workflows.all import WORKFLOWS
    from tests.workflows.test_server_workflow import ServerHarness

    nova = FakeNova()
    async with Worker(
        env.client, task_queue=queue, workflows=WORKFLOWS, activities=cloud.activities() + nova.activities()
    ):
        sh = ServerHarness(env, cloud, queue)
        sh.nova = nova
        yield sh
