"""Volume: a Cinder volume named volume-{uid} in the resource's project.

Contract: ../shared/spec/volumes.md. Every pass rediscovers the volume by its deterministic name (exact
match, done by the activity), so a worker crash between "create accepted" and "status written" adopts the
volume instead of duplicating it. An accepted create is not success: the pass requeues on a durable timer
until Cinder reports the volume available. Step labels (C…, S…, D…) are those of the decision tables below
and of tests/workflows/test_volume*.py.

Create (reconcile):
  C1 project missing in Keystone   -> Available=False/Provisioning "project … does not exist yet", retried
  C2 two or more exact-name matches -> Available=False/Errored (consistency), retried with backoff
  C3 no match                        -> create (user tags first, linkage keys last), then observe
  C4 one match                       -> adopt it; if provisioned, on a full pass (spec change or resync) C5
  C5 tags or linkage keys differ     -> update the osprov metadata (dropped tags removed)
Observe:
  S1 available | in-use              -> Available=True/Provisioned; status volumeID and size
  S2 status starts with "error"      -> Available=False/Errored, exactly ERROR_MESSAGE (details: worker log)
  S3 anything else                   -> Available=False/Provisioning, poll again (0.5s, growing, capped)
Delete (finalize, deletionPolicy=delete):
  D1 project missing in Keystone   -> done: no volume can have been created
  D2 no exact-name match             -> done (also how an accepted delete is confirmed)
  D3 deletable (available, error…)   -> delete, then poll until D2
  D4 in-use                           -> fail: detach first, retried
  D5 error_deleting                  -> fail Errored with ERROR_MESSAGE, retried (an operator must reset it)
  D6 anything else (creating, deleting, …) -> poll until it settles
"""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from osprov.api import cinder_io as io
    from osprov.api.cinder import VolumeSpec, VolumeStatus
    from osprov.api.common import AvailableReason
    from osprov.api.messages import ConditionState, EntityInput
    from osprov.api.registry import AVAILABLE
    from osprov.api.state import VolumeState
    from osprov.workflows.calls import call
    from osprov.workflows.entity import Entity, Outcome, PassFailed, StatusBase

# Poll intervals while waiting on Cinder (seconds): short first, since the fake backend and a healthy
# Cinder settle in about a second; grown by half each time up to the cap, so a slow backend is not
# hammered and a wait overshoots Cinder's own time by at most about a third.
POLL_FIRST_SECONDS = 0.5
POLL_GROWTH = 1.5
POLL_MAX_SECONDS = 10.0
# Reads per finalize before it gives up for this pass (the loop then retries with backoff), so one pass
# never grows the history without bound.
MAX_DELETE_POLLS = 30


def poll_delay(polls: int) -> float:
    """Seconds before the next read after `polls` reads that found the volume still on its way."""
    return float(min(POLL_FIRST_SECONDS * POLL_GROWTH**polls, POLL_MAX_SECONDS))


def _available(ok: bool, reason: AvailableReason, message: str) -> ConditionState:
    return ConditionState.of(AVAILABLE, ok, reason, message)


@workflow.defn(name="Volume")
class VolumeWorkflow(Entity[VolumeSpec, VolumeState]):
    KIND = "Volume"
    STATE = VolumeState

    @workflow.run
    async def run(self, inp: EntityInput) -> str:
        return await self.run_loop(inp)

    # ----- helpers ------------------------------------------------------------------------------
    @property
    def volume_name(self) -> str:
        return io.volume_name(self.st.ref.uid)

    @staticmethod
    def _scope(spec: VolumeSpec) -> io.ProjectScope:
        return io.ProjectScope(project=spec.project.name, domain=spec.project.domain)

    @staticmethod
    def _where(spec: VolumeSpec) -> str:
        return f"project {spec.project.name!r} in domain {spec.project.domain!r}"

    async def _lookup(self, spec: VolumeSpec) -> io.VolumeLookup:
        self.set_step(f"finding Cinder volume {self.volume_name}")
        return await call(
            io.FIND_VOLUMES,
            io.FindVolumes(scope=self._scope(spec), name=self.volume_name),
            summary=f"find volume {self.volume_name} in {spec.project.domain}/{spec.project.name}",
        )

    def _single(self, volumes: list[io.Volume], reason: AvailableReason) -> io.Volume | None:
        if len(volumes) > 1:
            # C2: fail closed; which one holds the data is for an operator to decide, never a guess.
            workflow.logger.warning(
                "duplicate Cinder volumes",
                extra={"volume_name": self.volume_name, "volume_ids": [v.id for v in volumes]},
            )
            raise PassFailed(
                f"{len(volumes)} Cinder volumes are named {self.volume_name}; osprov acts only on a unique "
                "match, so an operator must remove the extra volume(s) — retrying",
                reason=reason.value,
            )
        return volumes[0] if volumes else None

    def _system_keys(self, spec: VolumeSpec) -> dict[str, str]:
        ref = self.st.ref
        return {
            "kind": self.KIND,
            "namespace": ref.namespace,
            "name": ref.name,
            "uid": ref.uid,
            "project": f"{spec.project.domain}/{spec.project.name}",
        }

    def _log_error_state(self, volume: io.Volume) -> None:
        # Operator log only: Cinder's own status and the volume ID never reach the resource's status.
        workflow.logger.warning(
            "Cinder volume entered an error state",
            extra={"volume_id": volume.id, "cinder_status": volume.status, "volume_name": volume.name},
        )

    # ----- create --------------------------------------------------------------------------------
    async def reconcile(self, spec: VolumeSpec, full: bool) -> Outcome:
        found = await self._lookup(spec)
        if not found.project_found:  # C1
            raise PassFailed(
                f"{self._where(spec)} does not exist in Keystone yet; create it (for example with a "
                "Project resource) — retrying",
                reason=AvailableReason.PROVISIONING.value,
            )
        volume = self._single(found.volumes, AvailableReason.ERRORED)  # C2
        if volume is None:  # C3
            self.set_step(f"creating Cinder volume {self.volume_name}")
            volume = await call(
                io.CREATE_VOLUME,
                io.CreateVolume(
                    scope=self._scope(spec),
                    name=self.volume_name,
                    size=spec.size,
                    volume_type=spec.volume_class_id,
                    tags=spec.tags,
                    system=self._system_keys(spec),
                ),
                summary=f"create volume {self.volume_name} ({spec.size} GiB)",
            )
        elif (
            full
            and volume.status in io.PROVISIONED_STATUSES
            and io.metadata_drift(volume.metadata, spec.tags, self._system_keys(spec))
        ):  # C4, C5
            self.set_step(f"updating the metadata of Cinder volume {volume.id}")
            await call(
                io.UPDATE_METADATA,
                io.UpdateMetadata(
                    scope=self._scope(spec), id=volume.id, tags=spec.tags, system=self._system_keys(spec)
                ),
                summary=f"update metadata of volume {self.volume_name}",
            )
        return self._observe(volume)

    def _observe(self, volume: io.Volume) -> Outcome:
        self.k.volume_id, self.k.size = volume.id, volume.size
        if volume.status in io.PROVISIONED_STATUSES:  # S1
            self.k.polls = 0
            message = f"Cinder volume of {volume.size} GiB is {volume.status}"
            return Outcome(conditions=[_available(True, AvailableReason.PROVISIONED, message)])
        if io.is_error(volume.status):  # S2: terminal until the resource (or the volume) changes
            self.k.polls = 0
            self._log_error_state(volume)
            self.set_step("the volume is in an error state (details in the worker log)")
            return Outcome(conditions=[_available(False, AvailableReason.ERRORED, io.ERROR_MESSAGE)])
        # S3: accepted is not done; an unfamiliar state is never taken for convergence.
        polls = self.k.polls
        self.k.polls = polls + 1
        shown = volume.status if volume.status in io.KNOWN_TRANSITIONAL else "in an unfamiliar state"
        self.set_step(f"waiting for Cinder: the volume is {shown}")
        return Outcome(
            conditions=[
                _available(False, AvailableReason.PROVISIONING, f"waiting for Cinder: the volume is {shown}")
            ],
            requeue_after=poll_delay(polls),
        )

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

    # ----- delete --------------------------------------------------------------------------------
    async def finalize(self, spec: VolumeSpec) -> None:
        announced = False
        for poll in range(MAX_DELETE_POLLS):
            found = await self._lookup(spec)
            if not found.project_found:  # D1
                return
            volume = self._single(found.volumes, AvailableReason.DEPROVISIONING)
            if volume is None:  # D2
                return
            if volume.status == "in-use":  # D4
                raise PassFailed(
                    "the volume is attached to a server; detach it (remove it from the Server's volumes) "
                    "and deletion continues — retrying",
                    reason=AvailableReason.DEPROVISIONING.value,
                )
            if volume.status == "error_deleting":  # D5
                self._log_error_state(volume)
                raise PassFailed(io.ERROR_MESSAGE, reason=AvailableReason.ERRORED.value)
            if volume.status in io.DELETABLE_STATUSES:  # D3
                self.set_step(f"deleting Cinder volume {volume.id}")
                await call(
                    io.DELETE_VOLUME,
                    io.DeleteVolume(scope=self._scope(spec), id=volume.id),
                    summary=f"delete volume {self.volume_name}",
                )
            if not announced and poll > 0 and self.st.desired is not None:
                # Still there after a first re-read: tell the user what the finalizer waits for (a
                # delete Cinder finishes at once costs no status write).
                announced = True
                condition = _available(
                    False, AvailableReason.DEPROVISIONING, "waiting for Cinder to delete the volume"
                )
                await self._publish(self.st.desired, [condition])
            self.set_step(f"waiting for Cinder to delete the volume (it is {volume.status})")
            # D6 and after D3: a later read must confirm absence
            await workflow.sleep(
                poll_delay(poll), summary=f"wait for Cinder to delete the volume (it is {volume.status})"
            )
        raise PassFailed(
            "Cinder has not finished deleting the volume yet — still waiting",
            reason=AvailableReason.DEPROVISIONING.value,
        )
