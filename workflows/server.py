"""Server: a Nova server named server-{uid} — create/adopt, health monitor, image rebuild and resize exactly once.

Contracts: ../shared/spec/rebuild.md (decisions in workflows/rebuild.py) and the seed's Nova bullets.
Every pass starts from one fresh GET of the server. The monitor (M*) and the reconciler (P*) are this
one workflow, so there are no racing writers: the monitor part maps the read onto Phase/Healthy, the
launchedAt latch and the marker; the reconciler part decides the rebuild. A converged server is polled
on a durable timer (MONITOR_SECONDS) through the entity loop's resync.

The rebuild marker lives in workflow state (ServerState.rebuild) and is mirrored to status.rebuild.
Arming and submitting happen in different passes, and passes are separated by a durable timer, so the
armed marker is in history (the workflow task that set it completed) before Nova is asked to rebuild.
A changed spec.flavor is resized by workflows/server_resize.py (docs/resize.md) before the rebuild part runs.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import SearchAttributeUpdate
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from osprov.api import inventory_io
    from osprov.api import nova_io as io
    from osprov.api import search_attributes as sa
    from osprov.api.common import AvailableReason
    from osprov.api.errors import CONFLICT, NOT_FOUND, TRANSIENT, UNKNOWN_OUTCOME
    from osprov.api.messages import ConditionState, EntityInput
    from osprov.api.nova import HEALTHY, HealthyReason, RebuildState, ServerPhase, ServerSpec, ServerStatus
    from osprov.api.registry import AVAILABLE
    from osprov.api.state import ServerState
    from osprov.workflows import patches, server_plan
    from osprov.workflows.calls import call, call_local
    from osprov.workflows.entity import Outcome, PassFailed, StatusBase, error_type, failure_message
    from osprov.workflows.event_recorder import note
    from osprov.workflows.observe_import import Refused, Wanted, choose, mirror_server
    from osprov.workflows.plan import Recorder
    from osprov.workflows.rebuild import (
        Action,
        Decision,
        Observation,
        monitor,
        reconcile_pass,
    )
    from osprov.workflows.resize import unsettled
    from osprov.workflows.server_pinning import check_pinning
    from osprov.workflows.server_resize import (
        PATCH_RESIZE,
        RESIZE_PARK_MESSAGE,
        SUBMIT_ONCE,
        SUBMIT_TIMEOUT,
        resize_step,
    )
    from osprov.workflows.server_ssh import ssh_injection
    from osprov.workflows.server_volumes import reconcile_attachments
    from osprov.workflows.tenancy import CloudEntity

MONITOR_SECONDS = 30.0  # health poll of a converged server
# "Still waiting on Nova" re-checks: 1s growing by half each time to 10s (a fake-driver boot or rebuild
# takes ~2s, a real one tens of seconds; doubling would overshoot the short ones by seconds).
WAIT_FIRST_SECONDS, WAIT_GROWTH, WAIT_MAX_SECONDS = 1.0, 1.5, 10.0
MAX_CREATE_ATTEMPTS = 3  # a server that errors before its first boot is recreated at most this often in all
DELETE_POLL_SECONDS = 2.0  # runs that started deleting before PATCH_FINALIZE_REQUEUE
PATCH_REBUILD_ATTRIBUTE = "server-rebuild-search-attribute"  # upserts OsprovRebuild (new commands)
PATCH_PHASE_DELETING = "server-phase-deleting"  # the Deleting status write during finalize (new command)
# Deleting as passes of the entity loop, one read each (new commands: the loop's timer, no GET poll).
PATCH_FINALIZE_REQUEUE = "server-finalize-requeue"
PARK_MESSAGE = "server rebuild failed; set a different spec.imageID or replace the Server"
# spec.imageID (create and rebuild targets alike) is checked against the region inventory before any Nova
# call (a new local activity).
PATCH_IMAGE_CHECK = "server-image-check"
# O1…O4, OS1…OS3: managementPolicy unmanaged observes the imported server (runs before it refused, calling
# nothing).
PATCH_OBSERVE = "server-observe"
# A build or an accepted rebuild is waited out in one heartbeating activity (a read every 0.5 s, up to a
# minute); once Nova is done the next pass follows at once. Runs from before wait on growing timers.
PATCH_AWAIT = "server-await-in-activity"
# Arm and submit in one pass; runs from before end the arming pass and submit after a 1 s timer.
PATCH_SUBMIT_AFTER_ARM = "server-submit-after-arm"
# A settled wait's last read is the next pass's fresh read, and that pass runs at once in the same pass
# (no 0.05 s timer, no second GET). Runs from before end the pass and read again after the timer.
PATCH_SETTLED_READ = "server-settled-read"
# While Nova reports BUILD, a baremetal flavor's server is Queued or Building as Ironic says (a new local
# activity on BUILD passes). Runs from before show Building.
PATCH_BAREMETAL = "server-baremetal-status"
# With no server ID stored, the pass creates at once: nova.create_server is create-if-absent and makes
# the same exact-name lookup first, so the pass's own lookup (an activity) only repeated it. Runs from
# before look up, then create.
PATCH_CREATE_LOOKS = "server-create-looks-itself"
CHAINED_PASSES = 3  # at most this many settled reads are followed at once, so one pass stays bounded
AWAIT_WITHIN_SECONDS = 60.0
NEXT_PASS_SECONDS = 0.05  # after a settled wait: a durable timer only to end the workflow task

_HEALTH: dict[str, tuple[bool | None, HealthyReason]] = {
    "ACTIVE": (True, HealthyReason.HEALTHY),
    "ERROR": (False, HealthyReason.ERRORED),
    "REBUILD": (False, HealthyReason.PROVISIONING),
    "BUILD": (False, HealthyReason.PROVISIONING),
    "RESIZE": (False, HealthyReason.PROVISIONING),
    "VERIFY_RESIZE": (False, HealthyReason.PROVISIONING),
    "UNKNOWN": (None, HealthyReason.UNKNOWN),
}
_PHASE = {
    "BUILD": ServerPhase.BUILDING,
    "REBUILD": ServerPhase.BUILDING,
    "RESIZE": ServerPhase.BUILDING,
    "VERIFY_RESIZE": ServerPhase.BUILDING,
    "ACTIVE": ServerPhase.RUNNING,
    "SHUTOFF": ServerPhase.STOPPED,
    "ERROR": ServerPhase.ERROR,
}


def observation(read: io.ServerRead) -> Observation:
    return Observation(
        status=read.status, image_id=read.image_id, task_state=read.task_state, launched_at=read.launched_at
    )


def k8s_time(nova_time: str) -> str:
    """Nova's launched_at (2026-01-01T12:00:00.000000, UTC without zone) as metav1.Time."""
    return nova_time[:19].rstrip("Z") + "Z"


def healthy(status: str) -> ConditionState:
    ok, reason = _HEALTH.get(status, (False, HealthyReason.DEGRADED))
    return ConditionState.of(HEALTHY, ok, reason, f"Nova reports {status}")


def available(ok: bool, reason: AvailableReason, message: str) -> ConditionState:
    return ConditionState.of(AVAILABLE, ok, reason, message)


@workflow.defn(name="Server")
class ServerWorkflow(CloudEntity[ServerSpec, ServerState]):
    KIND = "Server"
    STATE = ServerState
    PLAN_READS = server_plan.READS
    # The last read of a settled wait, taken by the next pass instead of a GET (never stored in state: a
    # continue-as-new or a new workflow task simply reads again).
    settled_read: io.ServerRead | None = None

    @workflow.run
    async def run(self, inp: EntityInput) -> str:
        return await self.run_loop(inp)

    async def plan(self, spec: ServerSpec, rec: Recorder) -> str:
        return await server_plan.walk(self, spec, rec)

    # ----- state helpers -------------------------------------------------------------------------
    def server_name(self) -> str:
        return f"server-{self.st.ref.uid}"

    async def project(self, spec: ServerSpec, deleting: bool) -> io.Project | None:
        """The tenancy step (workflows/tenancy.py): the project, and the credential every call runs on."""
        where = await self.where(spec, deleting=deleting)
        if where is None:
            return None
        return io.Project(name=where.project, domain=where.domain, credential=where.credential)

    def metadata(self, spec: ServerSpec, project: io.Project) -> dict[str, str]:
        """User tags first, then the linkage keys, so a tag can never override them."""
        ref = self.st.ref
        meta = {f"{io.TAG_PREFIX}{k}": v for k, v in sorted(spec.tags.items())}
        meta.update(
            zip(
                io.SYSTEM_KEYS,
                (self.KIND, ref.namespace, ref.name, ref.uid, f"{project.domain}/{project.name}"),
                strict=True,
            )
        )
        return meta

    def waiting(self, seconds: float | None = None) -> float:
        """Next re-check while waiting on Nova: 1s growing to 10s unless a rule fixes it (P7a: 10s)."""
        n = self.k.waits
        self.k.waits = n + 1
        return seconds if seconds is not None else min(WAIT_FIRST_SECONDS * WAIT_GROWTH**n, WAIT_MAX_SECONDS)

    # ----- the loop's hooks ----------------------------------------------------------------------
    async def _pass(self) -> str | None:
        done = await super()._pass()
        change = self.st.desired
        if done is None and change is not None and not (change.deleting or change.gone):
            # The monitor: a converged (or parked) server is still read on a durable timer.
            now = workflow.now()
            poll = now + timedelta(seconds=MONITOR_SECONDS)
            # Also when the resync is overdue: a failed pass does not move it, and an overdue resync
            # would re-run the pass at once, forever.
            if self.st.resync_at is None or not (now < self.st.resync_at <= poll):
                self.st.resync_at = poll
        return done

    def set_step(self, step: str) -> None:
        # While a pass waits on Nova (a requeue timer), keep showing the decision it waits on (e.g.
        # "P7a: waiting for first boot") instead of the loop's generic idle text.
        if step.startswith("idle") and self.k.parked:
            step = f"P4a: parked: {PARK_MESSAGE}"
        elif step.startswith("idle") and self.k.resize_parked:
            step = f"Z1: parked: {RESIZE_PARK_MESSAGE}"
        elif step.startswith("idle") and self.st.retry_at is not None and self.k.step:
            step = f"{self.k.step} (re-check at {self.st.retry_at:%H:%M:%S})"
        elif not step.startswith(("idle", "reconciling")):
            self.k.step = step
        super().set_step(step)

    def observes(self) -> bool:
        return patches.patched(PATCH_OBSERVE)

    def search_attributes(self) -> list[SearchAttributeUpdate[Any]]:
        """OsprovRebuild = the marker's state, so `OsprovRebuild = 'Failed'` lists parked rebuilds."""
        if not patches.patched(PATCH_REBUILD_ATTRIBUTE):  # runs started before it: no such upsert
            return []
        m = self.k.rebuild
        return [sa.REBUILD.value_set(str(m.state.value)) if m else sa.REBUILD.value_unset()]

    def status(self, base: StatusBase) -> ServerStatus:
        k = self.k
        return ServerStatus(
            **base,
            server_id=k.server_id,
            phase=k.phase,
            launched_at=k.launched_at,
            mac_address=k.mac_address,
            volumes=k.volumes,
            rebuild=k.rebuild,  # a cleared marker is sent as null (workflows/status.py)
            flavor=k.flavor,
            resize=k.resize,
        )

    # ----- one pass ------------------------------------------------------------------------------
    async def reconcile(self, spec: ServerSpec, full: bool) -> Outcome:
        if spec.unmanaged:
            return await self.observe_import(spec)
        outcome = await self.reconcile_once(spec)
        for _ in range(CHAINED_PASSES):
            if self.settled_read is None:
                break
            outcome = await self.reconcile_once(spec)  # decides from the settled wait's last read
        self.settled_read = None
        return outcome

    async def reconcile_once(self, spec: ServerSpec) -> Outcome:
        await self.check_image(spec)
        project = await self.project(spec, deleting=False)
        assert project is not None
        read = await self.observe(spec, project)
        if read is None:  # a failed pre-boot server is being deleted before it is recreated
            return self.provisioning("waiting for the failed server to be deleted before recreating it")
        self.k.server_id = read.id
        obs = observation(read)
        health = self.apply_monitor(read, obs)

        if read.status == "ERROR" and not obs.launched and self.k.launched_at is None:
            return await self.recreate_failed(spec, project, read)
        if not obs.launched and obs.ref == spec.image_id:
            self.set_step("waiting for ACTIVE (first boot)")
            message = f"server {read.id} is {read.status}; waiting for its first boot"
            if read.status == "BUILD" and patches.patched(PATCH_BAREMETAL):
                message = await self.baremetal_phase(spec, read, message)
            booting = self.provisioning(message, health)
            return await self.settle(project, booting)
        await self.ensure_metadata(spec, project, read)
        if patches.patched(PATCH_RESIZE):
            resized = await resize_step(self, spec, project, read, health)
            if resized is not None:
                return resized
        return await self.rebuild_pass(spec, project, obs, health)

    async def observe_import(self, spec: ServerSpec) -> Outcome:
        """O1…O4 then OS1…OS3 (workflows/observe_import.py): one read of the imported server, mirrored; never a
        create, a metadata write, a rebuild, an attachment or a delete."""
        project = await self.project(spec, deleting=False)
        assert project is not None
        wanted = Wanted.of(spec.import_)
        step = f"O1: find the imported server ({wanted.shown})"
        self.set_step(step)
        query = io.FindImportedServer(project=project, server_id=wanted.id, name=wanted.name)
        found = await call(io.FIND_IMPORTED_SERVER, query, summary=step)
        chosen = choose(found, wanted, "Nova server", f"project {project.domain}/{project.name}")
        if isinstance(chosen, Refused):
            self.set_step(f"{chosen.rule}: {chosen.message}")
            raise PassFailed(chosen.message, reason=AvailableReason.ERRORED)
        read = chosen.found
        if self.k.server_id != read.id:
            self.event(
                note("Observed", f"observing Nova server {read.id} ({wanted.shown}); osprov never changes it")
            )
        self.k.server_id = read.id
        self.mirror_fields(read)
        m = mirror_server(read.id, read.status)
        self.set_step(f"{m.rule}: {m.message}")
        conditions = [available(m.available, m.reason, m.message), healthy(read.status)]
        if m.settling:
            return Outcome(conditions=conditions, requeue_after=self.waiting())
        self.k.waits = 0
        return Outcome(conditions=conditions)

    async def check_image(self, spec: ServerSpec) -> None:
        """Before any Nova call: the image is one the region inventory offers (each image once: a server
        keeps running an image that is withdrawn later; a new target is checked before it is rebuilt to)."""
        if not patches.patched(PATCH_IMAGE_CHECK) or self.k.offered_image == spec.image_id:
            return
        offer = await call_local(
            inventory_io.OFFERED_IMAGE,
            inventory_io.OfferQuery(image_id=spec.image_id),
            summary=f"check image {spec.image_id} against the region's Images",
        )
        if offer.enabled and not offer.image_offered:
            self.set_step("refused: the image is not offered")
            raise PassFailed(
                f"spec.imageID {spec.image_id!r} is not an Image this region offers (`kubectl get images`; "
                "an image that is not public and active, whose properties are invalid or whose signature "
                "does not verify is not offered); choose an offered image — no Nova call was made",
                reason=AvailableReason.ERRORED,
            )
        self.k.offered_image = spec.image_id

    async def get(self, project: io.Project, server_id: str) -> io.ServerRead | None:
        """One fresh GET /servers/{id} (None: gone)."""
        found = await call(
            io.GET_SERVER,
            io.ServerId(project=project, server_id=server_id),
            summary=f"read server {server_id}",
        )
        return found.server

    async def observe(self, spec: ServerSpec, project: io.Project) -> io.ServerRead | None:
        """Fresh read by stored ID; with none stored, create-if-absent (nova.create_server adopts a server of
        the exact name, e.g. one made before this workflow was restarted; runs from before look it up in an
        activity of their own first)."""
        stored = self.k.server_id
        settled, self.settled_read = self.settled_read, None
        if stored:
            read = (
                settled if settled is not None and settled.id == stored else await self.get(project, stored)
            )
            if read is not None:
                return read if self.k.deleting != read.id else None
            self.k.server_id = None
            self.k.deleting = None
        name = self.server_name()
        if not patches.patched(PATCH_CREATE_LOOKS):
            self.set_step(f"looking up {name}")
            found = await call(
                io.FIND_SERVER,
                io.FindServer(project=project, name=name),
                summary=f"find server {name}",
            )
            if len(found) > 1:
                ids = ", ".join(s.id for s in found)
                raise PassFailed(
                    f"several Nova servers are named {name} ({ids}); delete all but one", retry=False
                )
            if found:
                return found[0]
        await check_pinning(self.st.ref.namespace, spec, project, self.set_step)  # N1–N3: before any create
        creates = self.creates()
        if creates >= MAX_CREATE_ATTEMPTS:
            raise PassFailed(
                f"the server failed before its first boot {creates} times; check the flavor, image and "
                "networks, then change the spec to try again",
                reason=AvailableReason.ERRORED,
                retry=False,
            )
        self.k.creates = creates + 1
        self.set_step(f"creating {name}")
        self.event(note("Created", f"creating Nova server {name} from image {spec.image_id}"))
        return await call(
            io.CREATE_SERVER, self.create_request(spec, project), summary=f"create server {name}"
        )

    def create_request(self, spec: ServerSpec, project: io.Project) -> io.CreateServer:
        ssh = ssh_injection(spec)  # K1–K4: create-time only (a rebuild sends neither key nor user data)
        return io.CreateServer(
            project=project,
            name=self.server_name(),
            flavor=spec.flavor,
            image_id=spec.image_id,
            namespace=self.st.ref.namespace,
            nics=[io.Nic(network_id=n.network_id, network=n.network) for n in spec.networks],
            security_groups=list(spec.security_groups),
            key_name=ssh.key_name,
            identity_keypair=ssh.identity_keypair,
            ssh_ca=ssh.ssh_ca,
            user_data=spec.user_data,
            metadata=self.metadata(spec, project),
            host=spec.placement.host if spec.placement else None,
            hypervisor_hostname=spec.placement.hypervisor_hostname if spec.placement else None,
        )

    async def baremetal_phase(self, spec: ServerSpec, read: io.ServerRead, message: str) -> str:
        """The seed's baremetal disambiguation: Phase Queued while Ironic has not started deploying."""
        progress = await call_local(
            io.BAREMETAL_PROGRESS,
            io.BaremetalQuery(server_id=read.id, flavor=spec.flavor),
            summary=f"is server {read.id} waiting on hardware? (baremetal flavor: ask Ironic)",
        )
        if not progress.baremetal:
            return message
        state = (
            f"Ironic provision state {progress.provision_state}"
            if progress.provision_state
            else "no node yet"
        )
        if progress.queued:
            self.k.phase = ServerPhase.QUEUED
            return f"{message}: baremetal, queued for hardware ({state})"
        return f"{message}: baremetal, deploying ({state})"

    def creates(self) -> int:
        """Servers created for the current generation: a changed spec gets a fresh bound."""
        generation = self.st.desired.generation if self.st.desired else 0
        if self.k.creates_generation != generation:
            self.k.creates_generation = generation
            self.k.creates = 0
        return self.k.creates

    def apply_monitor(self, read: io.ServerRead, obs: Observation) -> ConditionState:
        """M1–M6 on the marker, the health mapping, and the write-once latches (observations only)."""
        marker, rule = monitor(self.k.rebuild, obs)
        if marker != self.k.rebuild:
            workflow.logger.info("monitor advanced the rebuild marker", extra={"rule": rule})
            self.k.rebuild = marker
        self.mirror_fields(read)
        return healthy(read.status)

    def mirror_fields(self, read: io.ServerRead) -> None:
        """Phase from the status, and the write-once latches launchedAt and macAddress."""
        k = self.k
        k.phase = _PHASE.get(read.status, ServerPhase.UNKNOWN)
        if read.launched_at and k.launched_at is None:
            k.launched_at = k8s_time(read.launched_at)
        if read.status == "ACTIVE" and read.mac_address and k.mac_address is None:
            k.mac_address = read.mac_address

    async def recreate_failed(self, spec: ServerSpec, project: io.Project, read: io.ServerRead) -> Outcome:
        """A server in ERROR that never booted: delete it; the next passes recreate it (bounded)."""
        if self.creates() >= MAX_CREATE_ATTEMPTS:
            raise PassFailed(
                f"the server entered ERROR before its first boot {MAX_CREATE_ATTEMPTS} times; check the "
                "flavor, image and networks, then change the spec to try again",
                reason=AvailableReason.ERRORED,
                retry=False,
            )
        self.set_step(f"deleting server {read.id}: ERROR before its first boot")
        await call(
            io.DELETE_SERVER,
            io.ServerId(project=project, server_id=read.id),
            summary=f"delete failed server {read.id}",
        )
        self.k.deleting = read.id
        return self.provisioning("the server failed before its first boot; recreating it")

    async def ensure_metadata(self, spec: ServerSpec, project: io.Project, read: io.ServerRead) -> None:
        want = self.metadata(spec, project)
        if any(read.metadata.get(k) != v for k, v in want.items()):
            await call(
                io.SET_METADATA,
                io.SetMetadata(project=project, server_id=read.id, metadata=want),
                summary=f"set metadata of server {read.id}",
            )

    async def rebuild_pass(
        self, spec: ServerSpec, project: io.Project, obs: Observation, health: ConditionState
    ) -> Outcome:
        decision = reconcile_pass(self.k.rebuild, obs, spec.image_id, unsettled(self.k.resize))
        self.set_step(decision.step)
        if decision.action is Action.ARM and not self.gate.passes(
            spec, "rebuild", f"rebuilding server {self.k.server_id} with image {spec.image_id}"
        ):  # approval gate (workflows/approval.py): nothing is armed until this image is approved
            return Outcome(conditions=[self.gate.waiting(), health], awaiting_approval=True)
        self.k.rebuild = decision.marker
        self.k.parked = False
        act = decision.action
        if act is Action.DONE:
            self.k.waits = 0
            ok = obs.status not in ("ERROR",)
            if ok and (spec.volumes or self.k.attached):
                problems = await self.reconcile_volumes(spec, project)
                if problems:
                    return self.provisioning("; ".join(problems), health)
            return Outcome(
                conditions=[
                    available(True, AvailableReason.PROVISIONED, f"server {self.k.server_id} is {obs.status}")
                    if ok
                    else available(False, AvailableReason.ERRORED, "the server is in ERROR"),
                    health,
                ]
            )
        if act is Action.PARK:
            self.k.parked = True
            return Outcome(conditions=[available(False, AvailableReason.ERRORED, PARK_MESSAGE), health])
        if act is Action.ARM and patches.patched(PATCH_SUBMIT_AFTER_ARM):
            then = reconcile_pass(self.k.rebuild, obs, spec.image_id)
            if then.action is Action.SUBMIT:
                return await self.submit_armed(project, spec.image_id, health, decision.step, then)
        if act in (Action.ARM, Action.FAIL):
            # Durable commit point: this pass ends, its workflow task completes with the marker in
            # state, and only a later pass (after a durable timer) may submit.
            return self.provisioning(decision.step, health, seconds=WAIT_FIRST_SECONDS)
        if act is Action.WAIT_ACCEPTED:
            return await self.settle(project, self.accepted_stamp(decision.step))
        if act is Action.WAIT:
            return self.provisioning(decision.step, health, seconds=decision.recheck_seconds)
        return await self.submit(project, spec.image_id, health)

    async def reconcile_volumes(self, spec: ServerSpec, project: io.Project) -> list[str]:
        """Attach every spec.volumes entry, detach the ones removed; returns user-safe problems."""
        assert self.k.server_id is not None
        server = (project, self.k.server_id, self.st.ref.namespace)
        res = await reconcile_attachments(spec.volumes, set(self.k.attached), server, self.set_step)
        self.k.attached = res.attached
        self.k.volumes = res.statuses
        return res.problems

    async def submit_armed(
        self, project: io.Project, image_id: str, health: ConditionState, armed: str, then: Decision
    ) -> Outcome:
        """P7b then P7e in one pass (rebuild.md, "Where the marker lives"): the submit activity starts only
        after the workflow task that schedules it — the one that armed — has completed, so the marker is
        in history before Nova is asked; the submit is decided by the rules from the armed marker and this
        pass's fresh read, as a later pass would. The armed marker is mirrored (Initiated) first."""
        if self.st.desired is not None:
            await self._publish(
                self.st.desired, [available(False, AvailableReason.PROVISIONING, armed), health]
            )
        self.set_step(then.step)
        self.k.rebuild = then.marker
        return await self.submit(project, image_id, health)

    async def submit(self, project: io.Project, image_id: str, health: ConditionState) -> Outcome:
        """P7e: the destructive call, sent once; every outcome but 2xx is decided by the next fresh read."""
        server_id = self.k.server_id
        assert server_id is not None
        try:
            await call(
                io.REBUILD,
                io.Rebuild(project=project, server_id=server_id, image_id=image_id),
                summary=f"rebuild server {server_id} to image {image_id}",
                retry=SUBMIT_ONCE,
                timeout=SUBMIT_TIMEOUT,
            )
            self.event(note("Updated", f"rebuild of server {server_id} to image {image_id} submitted"))
        except ActivityError as err:
            kind = error_type(err)
            if kind == CONFLICT:  # pre-acceptance: another action holds the task; wait silently
                self.set_step("P7e: Nova answered 409 (another action is running); waiting to resubmit")
                return self.provisioning("waiting for Nova to accept the rebuild", health)
            if kind in (UNKNOWN_OUTCOME, TRANSIENT, None):  # None: timed out (e.g. the worker died)
                self.set_step("P7e: rebuild outcome unknown; resolving it with a fresh read")
                return self.provisioning(
                    "rebuild outcome unknown; re-reading the server", health, seconds=WAIT_FIRST_SECONDS
                )
            if kind == NOT_FOUND:
                self.k.server_id = None
            raise PassFailed(failure_message(err)) from None
        marker = self.k.rebuild
        assert marker is not None
        self.k.rebuild = marker.with_state(RebuildState.REBUILDING)
        self.set_step("P7e: rebuild accepted; waiting for it to settle")
        return await self.settle(project, self.accepted_stamp("rebuild accepted"))

    async def settle(self, project: io.Project, waiting: Outcome, busy: tuple[str, ...] = ()) -> Outcome:
        """Wait out a build or an accepted rebuild in one activity (the status says what it waits for
        first). Settled: the next pass (a fresh read, the rules decide) follows at once; else the loop's
        growing timer, as before. Never used between arm and submit, nor for the protocol's own re-checks."""
        server_id = self.k.server_id
        if server_id is None or not patches.patched(PATCH_AWAIT):
            return waiting
        if self.st.desired is not None:
            await self._publish(self.st.desired, waiting.conditions)
        found = await self.until_news(
            call(
                io.AWAIT_SERVER,
                io.AwaitServer(
                    server=io.ServerId(project=project, server_id=server_id),
                    within_seconds=AWAIT_WITHIN_SECONDS,
                    busy_statuses=busy,
                    busy_seen_at=workflow.now(),  # this pass's read or accepted change: Nova is busy
                ),
                summary=f"wait for Nova: server {server_id} to finish its build or rebuild (a read every 0.5 s)",
                timeout=timedelta(seconds=AWAIT_WITHIN_SECONDS + 30),
            )
        )
        if found is None or not io.settled(found, busy):  # news cut it short, or Nova is still busy
            return waiting
        self.k.waits = 0
        if found.server is not None and patches.patched(PATCH_SETTLED_READ):
            self.settled_read = found.server  # reconcile runs the next pass now, from this read
        return waiting.model_copy(update={"requeue_after": NEXT_PASS_SECONDS})

    async def publish_now(self, conditions: list[ConditionState]) -> None:
        """Write the status (and its mirrors) within the pass, e.g. an armed marker before its submit."""
        if self.st.desired is not None:
            await self._publish(self.st.desired, conditions)

    # ----- outcomes ------------------------------------------------------------------------------
    def provisioning(
        self, message: str, health: ConditionState | None = None, seconds: float | None = None
    ) -> Outcome:
        conditions = [available(False, AvailableReason.PROVISIONING, message)]
        if health is not None:
            conditions.append(health)
        return Outcome(conditions=conditions, requeue_after=self.waiting(seconds))

    def accepted_stamp(self, message: str) -> Outcome:
        """The fixed stamp of an accepted rebuild (never derived from the rebuild response body)."""
        self.k.phase = ServerPhase.BUILDING
        return Outcome(
            conditions=[
                available(False, AvailableReason.PROVISIONING, f"rebuilding: {message}"),
                ConditionState.of(HEALTHY, False, HealthyReason.PROVISIONING, "rebuild in progress"),
            ],
            requeue_after=self.waiting(),
        )

    # ----- deletion ------------------------------------------------------------------------------
    async def finalize(self, spec: ServerSpec) -> Outcome | None:
        """Delete server-{uid} (ours by its deterministic name); later passes re-read until Nova no longer
        lists it. One read per pass, requeued by the loop: a stuck delete never grows one run's history
        beyond the loop's continue-as-new bound."""
        project = await self.project(spec, deleting=True)
        if project is None:  # its Identity is gone or never got a project: no server can exist
            return None
        if not patches.patched(PATCH_FINALIZE_REQUEUE):
            await self._finalize_polling(project)
            return None
        name = self.server_name()
        found = await call(
            io.FIND_SERVER, io.FindServer(project=project, name=name), summary=f"find server {name} to delete"
        )
        if not found:
            self.k.delete_sent = []
            return None
        for server in found:
            if server.id not in self.k.delete_sent:  # sent once; Nova finishes it asynchronously
                self.set_step(f"deleting server {server.id}")
                await call(
                    io.DELETE_SERVER,
                    io.ServerId(project=project, server_id=server.id),
                    summary=f"delete server {server.id}",
                )
                self.k.delete_sent.append(server.id)
                self.k.waits = 0
        self.k.phase = ServerPhase.DELETING
        self.set_step(f"waiting for Nova to delete server {', '.join(s.id for s in found)}")
        message = "waiting for Nova to delete the server"
        return Outcome(
            conditions=[available(False, AvailableReason.DEPROVISIONING, message)],
            requeue_after=self.waiting(),
        )

    async def _finalize_polling(self, project: io.Project) -> None:
        """Runs that started deleting before PATCH_FINALIZE_REQUEUE replay this: the delete polled
        inside one pass until Nova no longer has the server."""
        name = self.server_name()
        found = await call(
            io.FIND_SERVER,
            io.FindServer(project=project, name=name),
            summary=f"find server {name}",
        )
        for server in found:
            self.set_step(f"deleting server {server.id}")
            await call(
                io.DELETE_SERVER,
                io.ServerId(project=project, server_id=server.id),
                summary=f"delete server {server.id}",
            )
        announced = False
        for server in found:
            while await self.get(project, server.id) is not None:
                self.set_step(f"waiting for server {server.id} to be gone")
                if not announced and self.st.desired is not None and patches.patched(PATCH_PHASE_DELETING):
                    # Nova deletes asynchronously: show what the finalizer waits for (Phase Deleting).
                    announced = True
                    self.k.phase = ServerPhase.DELETING
                    message = "waiting for Nova to delete the server"
                    await self._publish(
                        self.st.desired, [available(False, AvailableReason.DEPROVISIONING, message)]
                    )
                await workflow.sleep(
                    DELETE_POLL_SECONDS, summary=f"wait for Nova to delete server {server.id}"
                )
