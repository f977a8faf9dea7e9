"""The Volume passes as pure decision tables (contract: volumes.md; the tables below and docs/volume.md).

No I/O and no Temporal: workflows/volume.py starts a pass with an empty `Observation`, asks `create`
(C1…C7, then S1…S3) or `delete` (D1…D6) for the next step, executes it, folds the result in and asks
again until a decision ends the pass. Every pass starts from a fresh read by the deterministic name, so
a crash between "create accepted" and "status written" adopts the volume instead of duplicating it.

Create (reconcile):
  C0 class not offered, size out of bounds -> Available=False/Errored, before any Cinder call, retried
     (workflows/inventory/volume_classes.py rows K1-K6; for a new Volume before its first lookup, for one
     whose volume vanished before it is created again)
  C1 project missing in Keystone   -> Available=False/Provisioning "project … does not exist yet", retried
  C2 two or more exact-name matches -> Available=False/Errored (consistency), retried with backoff
  C3 no match                        -> create (user tags first, linkage keys last), then observe;
                                        a volume never seen is created at once, without C1's lookup:
                                        the create is create-if-absent (its own exact-name lookup adopts
                                        a match); when it finds the project missing or two matches, the
                                        pass looks (C1) and C1/C2 answer as they would have
  C4 one match                       -> adopt it; if provisioned, on a full pass (spec change or resync) C5
                                        (also C3's create-if-absent answer when it adopted a volume)
  C5 tags or linkage keys differ     -> update the osprov metadata (dropped tags removed)
  C6 provisioned, size < spec.size   -> extend it in place (online when in-use: Cinder API 3.42+; refused ->
                                        Available=False "detach it to extend offline", retried), then observe
  C7 C6's extend settled below size  -> Available=False/Errored "Cinder did not extend…", retried with backoff
                                        (Cinder 29 resets a failed schedule to the old status, keeping the size)
Observe:
  S1 available | in-use              -> Available=True/Provisioned; status volumeID and size
  S2 status starts with "error"      -> Available=False/Errored, exactly ERROR_MESSAGE (details: worker log);
                                        also error_extending (the driver failed an extend)
  S3 anything else                   -> Available=False/Provisioning, poll again (0.5s, growing, capped);
                                        also extending (C6 accepted; never a second extend meanwhile)
Observe only (managementPolicy unmanaged with import; never a create, an update or a delete):
  O1 read the imported volume: by import.id, or by the exact name import.filter.name, in the project
  O2 project missing in Keystone   -> Available=False/Provisioning (as C1), retried
  O3 no such volume                 -> Available=False/Errored "nothing to observe", retried
  O4 two or more exact-name matches -> Available=False/Errored (as C2), retried
  then S1…S3 on the one volume: the status mirrors it
Delete (finalize, deletionPolicy=delete):
  D1 project missing in Keystone   -> done: no volume can have been created
  D2 no exact-name match             -> done (also how an accepted delete is confirmed)
  D3 deletable (available, error…)   -> delete, then re-read (next passes) until D2
  D4 in-use                           -> fail: detach first, retried
  D5 error_deleting                  -> fail Errored with ERROR_MESSAGE, retried (an operator must reset it)
  D6 anything else (creating, deleting, …) -> re-read until it settles
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from osprov.api import cinder_io as io
from osprov.api.cinder import VolumeSpec
from osprov.api.common import AvailableReason
from osprov.api.inventory_io import Offer, OfferQuery
from osprov.workflows.inventory.volume_classes import check_class
from osprov.workflows.observe_import import Wanted


@dataclass(frozen=True)
class Observation:
    lookup: io.VolumeLookup | None = None  # the exact-name read of this pass
    volume: io.Volume | None = None  # the volume this pass made (C3)
    updated: bool = False  # C5 ran this pass
    extended: io.Volume | None = None  # C6: the read after this pass's extend
    offer: Offer | None = None  # C0: the VolumeClasses the region inventory publishes
    create_refused: bool = False  # C3 at once found the project missing or two matches: look (C1, C2)


@dataclass(frozen=True)
class Provisioned:
    """S1: Available=True."""

    message: str


@dataclass(frozen=True)
class Errored:
    """S2: terminal until the resource or the volume changes; Cinder's own status goes to the log only."""

    volume: io.Volume


@dataclass(frozen=True)
class Wait:
    """S3, D3, D6: Cinder is on its way; read again on a durable timer."""

    message: str


@dataclass(frozen=True)
class Fail:
    """The pass cannot finish: the message says what to fix; retried with backoff."""

    message: str
    reason: AvailableReason
    log: str = ""  # what the operator log says, with the IDs and Cinder statuses of `volumes`
    volumes: tuple[io.Volume, ...] = ()


@dataclass(frozen=True)
class Done:
    """Deleted (or nothing could have been created)."""


DELETE_WAIT = "waiting for Cinder to delete the volume"
ERROR_LOG = "Cinder volume entered an error state"  # the operator log line of S2 and D5
Call = io.FindVolumes | io.CreateVolume | io.UpdateMetadata | io.ExtendVolume | io.DeleteVolume | OfferQuery
Action = Call | Provisioned | Errored | Wait | Fail | Done


@dataclass(frozen=True)
class Decision:
    rule: str  # step label, e.g. "C3"
    action: Action
    what: str  # a sentence: the step (query, Web UI details) and the call's summary
    observed: io.Volume | None = None  # S1–S3: the volume the status reports (volumeID, size)

    @property
    def step(self) -> str:
        return f"{self.rule}: {self.what}"


@dataclass(frozen=True)
class Target:
    """Who the volume belongs to: its deterministic name, the linkage keys written last, and the project (and
    credential) every call is scoped to (workflows/tenancy.py)."""

    name: str
    system: dict[str, str]
    scope: io.ProjectScope
    check_class: bool = False  # C0 applies (runs started before the region inventory never check)
    volume_known: bool = False  # a volume was seen: C0 only before creating it again
    extends: bool = False  # C6/C7 apply (runs started before the volume-extend patch never extend)
    creates_at_once: bool = False  # C3 without C1's lookup for a volume never seen (runs from before look)


def _where(target: Target) -> str:
    return f"project {target.scope.project!r} in domain {target.scope.domain!r}"


def _find(target: Target, rule: str) -> Decision:
    find = io.FindVolumes(scope=target.scope, name=target.name)
    return Decision(rule, find, f"find volume {target.name} in {target.scope.domain}/{target.scope.project}")


def _duplicates(target: Target, volumes: list[io.Volume], reason: AvailableReason, rule: str) -> Decision:
    # Fail closed: which one holds the data is for an operator to decide, never a guess.
    message = (
        f"{len(volumes)} Cinder volumes are named {target.name}; osprov acts only on a unique "
        "match, so an operator must remove the extra volume(s) — retrying"
    )
    failed = Fail(message, reason, "duplicate Cinder volumes", tuple(volumes))
    return Decision(rule, failed, f"more than one Cinder volume is named {target.name}")


def _class_check(spec: VolumeSpec, target: Target, obs: Observation) -> Decision | None:
    """C0: the class asked for is offered and the size within its bounds (None: go on)."""
    if not target.check_class or (spec.volume_class is None and spec.volume_class_id is None):
        return None
    if obs.offer is None:
        return Decision("C0", OfferQuery(), "check the volume class against the region's VolumeClasses")
    verdict = check_class(spec.volume_class, spec.volume_class_id, spec.size, obs.offer)
    if verdict.ok:
        return None
    refused = Fail(verdict.message, AvailableReason.ERRORED)
    return Decision("C0", refused, f"the volume class is refused ({verdict.rule}), no Cinder call made")


def _volume_type(spec: VolumeSpec, obs: Observation) -> str | None:
    """The Cinder volume type to create with: the offered class's, else volumeClassID as given."""
    if obs.offer is None:
        return spec.volume_class_id
    return check_class(spec.volume_class, spec.volume_class_id, spec.size, obs.offer).volume_type


# --- create (C0…C7) and observe (S1…S3) -------------------------------------------------------------------
def create(spec: VolumeSpec, target: Target, full: bool, obs: Observation) -> Decision:
    """The next step of the create pass; `full`: the spec changed or the resync is due (C5 runs then)."""
    if obs.extended is not None:
        return extended(spec, obs.extended)
    if obs.volume is not None:
        if not target.creates_at_once:
            return observe(obs.volume)
        volume = obs.volume  # what C3's create made, or adopted: C4…C6 as for a lookup's match
    elif obs.lookup is None:
        checked = None if target.volume_known else _class_check(spec, target, obs)
        if checked is not None:
            return checked
        if target.creates_at_once and not target.volume_known and not obs.create_refused:
            return _create(spec, target, obs)
        return _find(target, "C1")
    elif not obs.lookup.project_found:
        message = io.project_missing(target.scope.project, target.scope.domain)
        return Decision("C1", Fail(message, AvailableReason.PROVISIONING), "the project does not exist yet")
    else:
        volumes = obs.lookup.volumes
        if len(volumes) > 1:
            return _duplicates(target, volumes, AvailableReason.ERRORED, "C2")
        if not volumes:
            return _class_check(spec, target, obs) or _create(spec, target, obs)
        volume = volumes[0]
    provisioned = volume.status in io.PROVISIONED_STATUSES
    if (
        full
        and not obs.updated
        and provisioned
        and io.metadata_drift(volume.metadata, spec.tags, target.system)
    ):
        update = io.UpdateMetadata(scope=target.scope, id=volume.id, tags=spec.tags, system=target.system)
        return Decision("C5", update, f"update the osprov metadata of volume {target.name}")
    if target.extends and provisioned and volume.size < spec.size:
        # Decided on this pass's fresh read: a volume already extending (S3) or at the size (S1) gets no
        # second extend, so a replayed or retried pass never sends two for one target size.
        grow = io.ExtendVolume(scope=target.scope, id=volume.id, size=spec.size)
        online = " online (attached)" if volume.status == "in-use" else ""
        return Decision(
            "C6", grow, f"extend volume {target.name}{online} from {volume.size} to {spec.size} GiB"
        )
    return observe(volume)  # C4: adopted


def _create(spec: VolumeSpec, target: Target, obs: Observation) -> Decision:
    make = io.CreateVolume(
        scope=target.scope,
        name=target.name,
        size=spec.size,
        volume_type=_volume_type(spec, obs),
        tags=spec.tags,
        system=target.system,
    )
    return Decision("C3", make, f"create volume {target.name} ({spec.size} GiB)")


def extended(spec: VolumeSpec, volume: io.Volume) -> Decision:
    """After C6's extend (the read after it, or the wait's last read): C7 if Cinder settled without the new
    size, else S1–S3."""
    if volume.status in io.PROVISIONED_STATUSES and volume.size < spec.size:
        message = (
            f"Cinder did not extend the volume to {spec.size} GiB: it is {volume.status} at {volume.size} GiB "
            "again (its user messages say why: openstack volume message list, e.g. no backend with room) — "
            "retrying"
        )
        failed = Fail(message, AvailableReason.ERRORED)
        return Decision("C7", failed, f"Cinder did not extend the volume to {spec.size} GiB", volume)
    return observe(volume)


# --- observe only (O1…O4, then S1…S3) ------------------------------------------------------------------
def observe_import(spec: VolumeSpec, target: Target, obs: Observation) -> Decision:
    """The next step of an unmanaged Volume's pass: read the imported volume, report it, change nothing."""
    wanted = Wanted.of(spec.import_)
    by_name, shown = wanted.name, wanted.shown
    if obs.lookup is None:
        find = io.FindVolumes(scope=target.scope, name=by_name or "", id=wanted.id)
        return Decision("O1", find, f"find the imported volume ({shown}) in {_where(target)}")
    if not obs.lookup.project_found:
        message = f"{_where(target)} does not exist in Keystone — retrying"
        return Decision("O2", Fail(message, AvailableReason.PROVISIONING), "the project does not exist")
    volumes = obs.lookup.volumes
    if not volumes:
        message = (
            f"no Cinder volume with {shown} in {_where(target)}: nothing to observe; fix spec.import "
            "(a new resource) or create the volume — retrying"
        )
        return Decision("O3", Fail(message, AvailableReason.ERRORED), f"no volume with {shown}")
    if len(volumes) > 1:
        named = replace(target, name=by_name or target.name)
        return _duplicates(named, volumes, AvailableReason.ERRORED, "O4")
    return observe(volumes[0])


def observe(volume: io.Volume) -> Decision:
    """S1–S3: what the volume's Cinder status means for the resource."""
    if volume.status in io.PROVISIONED_STATUSES:
        message = f"Cinder volume of {volume.size} GiB is {volume.status}"
        return Decision("S1", Provisioned(message), message, volume)
    if io.is_error(volume.status):
        what = "the volume is in an error state (details in the worker log)"
        return Decision("S2", Errored(volume), what, volume)
    # Accepted is not done, and an unfamiliar state is never taken for convergence.
    shown = volume.status if volume.status in io.KNOWN_TRANSITIONAL else "in an unfamiliar state"
    message = f"waiting for Cinder: the volume is {shown}"
    return Decision("S3", Wait(message), message, volume)


# --- delete (D1…D6) ---------------------------------------------------------------------------------------
def delete(spec: VolumeSpec, target: Target, obs: Observation) -> Decision:
    """The next step of the delete pass; a later read must confirm absence (D2)."""
    if obs.volume is not None:  # the delete this pass sent (D3): a later read must confirm absence
        return Decision("D3", Wait(DELETE_WAIT), f"{DELETE_WAIT} (it was {obs.volume.status})")
    if obs.lookup is None:
        return _find(target, "D1")
    if not obs.lookup.project_found:
        return Decision("D1", Done(), "the project does not exist: no volume can have been created")
    volumes = obs.lookup.volumes
    if len(volumes) > 1:
        return _duplicates(target, volumes, AvailableReason.DEPROVISIONING, "D2")
    if not volumes:
        return Decision("D2", Done(), f"volume {target.name} is gone")
    volume = volumes[0]
    if volume.status == "in-use":
        message = (
            "the volume is attached to a server; detach it (remove it from the Server's volumes) "
            "and deletion continues — retrying"
        )
        return Decision("D4", Fail(message, AvailableReason.DEPROVISIONING), "the volume is attached")
    if volume.status == "error_deleting":
        failed = Fail(io.ERROR_MESSAGE, AvailableReason.ERRORED, ERROR_LOG, (volume,))
        return Decision("D5", failed, "Cinder failed to delete the volume (details in the worker log)")
    if volume.status in io.DELETABLE_STATUSES:
        return Decision(
            "D3", io.DeleteVolume(scope=target.scope, id=volume.id), f"delete volume {target.name}"
        )
    return Decision("D6", Wait(DELETE_WAIT), f"{DELETE_WAIT} (it is {volume.status})")
