"""Inputs and outputs of the Cinder activities (the contract between workflows/volume.py and activities/cinder.py).

Pure pydantic and the standard library: workflows import this module inside Temporal's sandbox. Also the
two conventions both sides must agree on: the deterministic volume name and the metadata layout.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from osprov.api.activity import Activity
from osprov.api.identity_io import Credential

# Metadata, the same convention as the Server kind (api/nova_io.py): user tags under "osprov.tag.", the
# controller's linkage keys under "osprov." and written last, so no tag can ever override one. Characters are
# limited to what both Cinder and Nova accept in metadata keys.
METADATA_PREFIX = "osprov."
TAG_PREFIX = "osprov.tag."
SYSTEM_KEYS = ("kind", "namespace", "name", "uid", "project", "region")  # under METADATA_PREFIX

# Statuses in which the volume is provisioned: available, or attached by a server (in-use). Anything else
# that does not start with "error" is still on its way, including states osprov does not know.
PROVISIONED_STATUSES = frozenset({"available", "in-use"})
# Statuses Cinder accepts a (non-forced) delete in, besides those above that are attached.
DELETABLE_STATUSES = frozenset({"available", "error", "error_restoring", "error_extending", "error_managing"})
# Transitional statuses named in a user-visible "waiting" message; any other is called "an unfamiliar state".
KNOWN_TRANSITIONAL = frozenset(
    {
        "creating",
        "downloading",
        "attaching",
        "detaching",
        "reserved",
        "deleting",
        "extending",
        "uploading",
        "backing-up",
        "restoring-backup",
        "retyping",
        "maintenance",
        "awaiting-transfer",
    }
)
ERROR_MESSAGE = "provider volume entered an error state"


def volume_name(uid: str) -> str:
    """The Cinder name of the Volume resource with this UID (its stable identity)."""
    return f"volume-{uid}"


def project_missing(project: str, domain: str) -> str:
    """C1's answer, also what cinder.create_volume says when the project is missing."""
    return (
        f"project {project!r} in domain {domain!r} does not exist in Keystone yet; create it (for example "
        "with a Project resource) — retrying"
    )


def is_error(status: str) -> bool:
    return status.startswith("error")


def volume_metadata(tags: dict[str, str], system: dict[str, str]) -> dict[str, str]:
    """Cinder metadata: user tags first, then the linkage keys, so a tag can never override a linkage key."""
    unknown = sorted(set(system) - set(SYSTEM_KEYS))
    if unknown:
        raise ValueError(f"unknown system metadata keys {unknown}; known: {list(SYSTEM_KEYS)}")
    metadata = {f"{TAG_PREFIX}{key}": value for key, value in sorted(tags.items())}
    metadata.update({f"{METADATA_PREFIX}{key}": value for key, value in system.items()})
    return metadata


def metadata_drift(current: dict[str, str], tags: dict[str, str], system: dict[str, str]) -> bool:
    """True if `current` lacks a wanted tag or linkage key (region is not compared: the activity knows it)
    or holds a tag the spec no longer has."""
    want = volume_metadata(tags, system)
    stale = [k for k in current if k.startswith(TAG_PREFIX) and k not in want]
    return bool(stale) or any(current.get(k) != v for k, v in want.items())


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ProjectScope(_Model):
    """The Keystone project every call is scoped to: with `credential`, its Identity's application credential
    makes the calls; without, the controller's credentials re-scoped to it (spec.project, where mapped)."""

    project: str
    domain: str
    credential: Credential | None = None


class FindVolumes(_Model):
    scope: ProjectScope
    name: str
    # Observe by ID (import.id of an unmanaged Volume): the project's volume with this ID, whatever its name.
    id: str | None = None


class Volume(_Model):
    """What the workflow sees of a Cinder volume (no provider diagnostics: those stay in the worker log)."""

    id: str
    name: str
    status: str
    size: int
    metadata: dict[str, str] = Field(default_factory=dict)


class VolumeLookup(_Model):
    """project_found=False: the project does not exist in Keystone (so no volume can exist in it)."""

    project_found: bool
    volumes: list[Volume] = Field(default_factory=list)  # exact-name matches, sorted by ID


class AwaitVolume(_Model):
    """Read the volume by ID every `interval_seconds` until it settles — provisioned or in error (`gone`
    False), absent (`gone` True) — or `within_seconds` pass; the answer is the last read (by ID)."""

    scope: ProjectScope
    id: str
    gone: bool = False
    interval_seconds: float = 0.5
    within_seconds: float = 60.0
    # When the workflow last saw it busy (the change it just made was answered): the first read is at once,
    # the second one interval after this time (activities/cloud.py, poll). None: every interval.
    busy_seen_at: datetime | None = None


class CreateVolume(_Model):
    """Create-if-absent: an existing exact-name volume is returned instead of creating another.

    `system` holds the linkage keys except region, which the activity adds from its connection.
    """

    scope: ProjectScope
    name: str
    size: int = Field(ge=1)
    volume_type: str | None = None
    tags: dict[str, str] = Field(default_factory=dict)
    system: dict[str, str] = Field(default_factory=dict)


class UpdateMetadata(_Model):
    """Make the volume's osprov metadata what the spec says: set what differs (linkage keys last), remove
    tags the spec no longer has. Metadata not under the osprov prefix is left alone."""

    scope: ProjectScope
    id: str
    tags: dict[str, str] = Field(default_factory=dict)
    system: dict[str, str] = Field(default_factory=dict)


class ExtendVolume(_Model):
    """Grow the volume to `size` GiB in place: online (Cinder volume API 3.42+) when it is attached. Sent only
    when a fresh read finds it provisioned and smaller; the answer is a read after the call (extending, or
    already at `size` when an earlier attempt's extend was accepted: no second extend is sent)."""

    scope: ProjectScope
    id: str
    size: int = Field(ge=1)


class DeleteVolume(_Model):
    scope: ProjectScope
    id: str


DeleteOutcome = Literal["accepted", "absent"]


class DeleteResult(_Model):
    outcome: DeleteOutcome


# --- activities: the typed contracts (osprov.api.activity) -----------------------------------------
FIND_VOLUMES: Activity[FindVolumes, VolumeLookup] = Activity("cinder.find_volumes", FindVolumes, VolumeLookup)
CREATE_VOLUME: Activity[CreateVolume, Volume] = Activity("cinder.create_volume", CreateVolume, Volume)
UPDATE_METADATA: Activity[UpdateMetadata, bool] = Activity("cinder.update_metadata", UpdateMetadata, bool)
AWAIT_VOLUME: Activity[AwaitVolume, VolumeLookup] = Activity("cinder.await_volume", AwaitVolume, VolumeLookup)
EXTEND_VOLUME: Activity[ExtendVolume, Volume] = Activity("cinder.extend_volume", ExtendVolume, Volume)
DELETE_VOLUME: Activity[DeleteVolume, DeleteResult] = Activity(
    "cinder.delete_volume", DeleteVolume, DeleteResult
)
