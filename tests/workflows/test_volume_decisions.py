"""The Volume decision tables (workflows/volume.py's docstring, volumes.md), one row per rule by step label.

Pure functions, no Temporal; test_volume.py proves the workflow executes these decisions.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from osprov.api import cinder_io as io
from osprov.api.cinder import VolumeSpec
from osprov.api.common import AvailableReason as R
from osprov.workflows.volume_decisions import (
    DELETE_WAIT,
    ERROR_LOG,
    Action,
    Done,
    Errored,
    Fail,
    Observation,
    Provisioned,
    Target,
    Wait,
    create,
    delete,
    observe_import,
)

NAME = io.volume_name("u1")
SCOPE = io.ProjectScope(project="p", domain="Default")
SYSTEM = {"kind": "Volume", "namespace": "ns", "name": "data", "uid": "u1", "project": "Default/p"}
TARGET = Target(name=NAME, system=SYSTEM, scope=SCOPE)
TAGS = {"team": "storage"}
IN_SYNC = io.volume_metadata(TAGS, SYSTEM | {"region": "RegionOne"})


def spec(**extra: Any) -> VolumeSpec:
    return VolumeSpec.model_validate(
        {"project": {"name": "p", "domain": "Default"}, "size": 2, "tags": TAGS} | extra
    )


def vol(
    status: str = "available", vid: str = "vol-1", metadata: dict[str, str] | None = None, size: int = 2
) -> io.Volume:
    meta = IN_SYNC if metadata is None else metadata
    return io.Volume(id=vid, name=NAME, status=status, size=size, metadata=meta)


def found(*volumes: io.Volume, project: bool = True) -> Observation:
    return Observation(lookup=io.VolumeLookup(project_found=project, volumes=list(volumes)))


CREATED = vol("creating")
DUPLICATES = (vol(), vol(vid="vol-2"))
DUPLICATE_MESSAGE = (
    f"2 Cinder volumes are named {NAME}; osprov acts only on a unique match, so an operator must remove "
    "the extra volume(s) — retrying"
)
MISSING_PROJECT = (
    "project 'p' in domain 'Default' does not exist in Keystone yet; create it (for example with a Project "
    "resource) — retrying"
)

# id, full pass?, observation, rule, action
CREATE_ROWS: list[tuple[str, bool, Observation, str, Action]] = [
    ("C1-find-by-exact-name", False, Observation(), "C1", io.FindVolumes(scope=SCOPE, name=NAME)),
    (
        "C1-missing-project-is-retried",
        False,
        found(project=False),
        "C1",
        Fail(MISSING_PROJECT, R.PROVISIONING),
    ),
    (
        "C2-two-exact-matches-fail-closed",
        False,
        found(*DUPLICATES),
        "C2",
        Fail(DUPLICATE_MESSAGE, R.ERRORED, "duplicate Cinder volumes", DUPLICATES),
    ),
    (
        "C3-create-with-user-tags-and-linkage-keys",
        False,
        found(),
        "C3",
        io.CreateVolume(scope=SCOPE, name=NAME, size=2, volume_type=None, tags=TAGS, system=SYSTEM),
    ),
    (
        "C3-created-volume-is-observed",
        False,
        Observation(lookup=io.VolumeLookup(project_found=True), volume=CREATED),
        "S3",
        Wait("waiting for Cinder: the volume is creating"),
    ),
    (
        "C4-adopt-the-exact-match",
        False,
        found(vol()),
        "S1",
        Provisioned("Cinder volume of 2 GiB is available"),
    ),
    (
        "C4-drift-waits-for-a-full-pass",
        False,
        found(vol(metadata={})),
        "S1",
        Provisioned("Cinder volume of 2 GiB is available"),
    ),
    (
        "C5-drift-is-updated-on-a-full-pass",
        True,
        found(vol(metadata={})),
        "C5",
        io.UpdateMetadata(scope=SCOPE, id="vol-1", tags=TAGS, system=SYSTEM),
    ),
    (
        "C5-dropped-tag-is-drift",
        True,
        found(vol(metadata=IN_SYNC | {"osprov.tag.old": "x"})),
        "C5",
        io.UpdateMetadata(scope=SCOPE, id="vol-1", tags=TAGS, system=SYSTEM),
    ),
    (
        "C5-foreign-keys-are-not-drift",
        True,
        found(vol(metadata=IN_SYNC | {"user": "x"})),
        "S1",
        Provisioned("Cinder volume of 2 GiB is available"),
    ),
    (
        "C5-never-while-creating",
        True,
        found(vol("creating", metadata={})),
        "S3",
        Wait("waiting for Cinder: the volume is creating"),
    ),
    (
        "C5-updated-volume-is-observed",
        True,
        Observation(lookup=found(vol(metadata={})).lookup, updated=True),
        "S1",
        Provisioned("Cinder volume of 2 GiB is available"),
    ),
    ("S1-available", False, found(vol()), "S1", Provisioned("Cinder volume of 2 GiB is available")),
    (
        "S1-in-use-counts-as-provisioned",
        False,
        found(vol("in-use")),
        "S1",
        Provisioned("Cinder volume of 2 GiB is in-use"),
    ),
    ("S2-error", False, found(vol("error")), "S2", Errored(vol("error"))),
    ("S2-any-error-prefix", False, found(vol("error_managing")), "S2", Errored(vol("error_managing"))),
    (
        "S3-downloading-waits",
        False,
        found(vol("downloading")),
        "S3",
        Wait("waiting for Cinder: the volume is downloading"),
    ),
    (
        "S3-unfamiliar-status-is-never-convergence",
        False,
        found(vol("something_new")),
        "S3",
        Wait("waiting for Cinder: the volume is in an unfamiliar state"),
    ),
]


@pytest.mark.parametrize(
    ("row", "full", "obs", "rule", "action"), CREATE_ROWS, ids=[r[0] for r in CREATE_ROWS]
)
def test_create_rule(row: str, full: bool, obs: Observation, rule: str, action: Action) -> None:
    d = create(spec(), TARGET, full, obs)
    assert (d.rule, d.action) == (rule, action)


# C3 at once (patch volume-create-looks-itself): a volume never seen is created without C1's lookup; the
# create-if-absent's answer (made, or adopted) then goes through C4…C6 like a lookup's match.
AT_ONCE = replace(TARGET, creates_at_once=True, extends=True)
MAKE = io.CreateVolume(scope=SCOPE, name=NAME, size=2, volume_type=None, tags=TAGS, system=SYSTEM)
AT_ONCE_ROWS: list[tuple[str, Target, bool, Observation, str, Action]] = [
    ("C3-a-volume-never-seen-is-created-at-once", AT_ONCE, True, Observation(), "C3", MAKE),
    (
        "C3-at-once-refused-looks-first",
        AT_ONCE,
        True,
        Observation(create_refused=True),
        "C1",
        io.FindVolumes(scope=SCOPE, name=NAME),
    ),
    (
        "C3-a-known-volume-is-looked-up",
        replace(AT_ONCE, volume_known=True),
        True,
        Observation(),
        "C1",
        io.FindVolumes(scope=SCOPE, name=NAME),
    ),
    (
        "C3-at-once-made-volume-is-observed",
        AT_ONCE,
        True,
        Observation(volume=CREATED),
        "S3",
        Wait("waiting for Cinder: the volume is creating"),
    ),
    (
        "C4-at-once-adopted-drift-is-updated",
        AT_ONCE,
        True,
        Observation(volume=vol(metadata={})),
        "C5",
        io.UpdateMetadata(scope=SCOPE, id="vol-1", tags=TAGS, system=SYSTEM),
    ),
    (
        "C6-at-once-adopted-smaller-volume-is-extended",
        AT_ONCE,
        True,
        Observation(volume=vol(size=1)),
        "C6",
        io.ExtendVolume(scope=SCOPE, id="vol-1", size=2),
    ),
    (
        "C5-at-once-after-the-update-is-observed",
        AT_ONCE,
        True,
        Observation(volume=vol(metadata={}), updated=True),
        "S1",
        Provisioned("Cinder volume of 2 GiB is available"),
    ),
]


# Issue 19: spec.size grows (C6, C7). The decision comes from the pass's fresh read, so a replayed or
# retried pass finds the volume extending (S3) or extended (S1) and never sends a second extend.
EXTENDS = replace(TARGET, extends=True)
GROW = io.ExtendVolume(scope=SCOPE, id="vol-1", size=2)
NOT_EXTENDED = (
    "Cinder did not extend the volume to 2 GiB: it is available at 1 GiB again (its user messages say why: "
    "openstack volume message list, e.g. no backend with room) — retrying"
)
SMALL = vol(size=1)
EXTEND_ROWS: list[tuple[str, Target, bool, Observation, str, Action]] = [
    ("C6-smaller-available-volume-is-extended", EXTENDS, False, found(SMALL), "C6", GROW),
    ("C6-smaller-in-use-volume-is-extended-online", EXTENDS, False, found(vol("in-use", size=1)), "C6", GROW),
    ("C6-on-a-resync-too", EXTENDS, True, found(SMALL), "C6", GROW),
    ("C6-never-before-the-patch", TARGET, False, found(SMALL), "S1", Provisioned("Cinder volume of 1 GiB is available")),
    ("C6-extending-waits-never-a-second-extend", EXTENDS, False, found(vol("extending", size=1)), "S3", Wait("waiting for Cinder: the volume is extending")),
    ("C6-already-at-the-size-sends-nothing", EXTENDS, False, found(vol()), "S1", Provisioned("Cinder volume of 2 GiB is available")),
    ("C6-a-larger-volume-is-never-shrunk", EXTENDS, False, found(vol(size=3)), "S1", Provisioned("Cinder volume of 3 GiB is available")),
    ("C6-never-while-creating", EXTENDS, False, found(vol("creating", size=1)), "S3", Wait("waiting for Cinder: the volume is creating")),
    ("C6-error-extending-is-an-error", EXTENDS, False, found(vol("error_extending", size=1)), "S2", Errored(vol("error_extending", size=1))),
    ("C6-metadata-first-on-a-full-pass", EXTENDS, True, found(vol(metadata={}, size=1)), "C5", io.UpdateMetadata(scope=SCOPE, id="vol-1", tags=TAGS, system=SYSTEM)),
    ("C6-after-C5-in-the-same-pass", EXTENDS, True, Observation(lookup=found(vol(metadata={}, size=1)).lookup, updated=True), "C6", GROW),
    ("C6-the-extend-sent-is-observed", EXTENDS, False, replace(found(SMALL), extended=vol("extending", size=1)), "S3", Wait("waiting for Cinder: the volume is extending")),
    ("C6-grown-is-provisioned", EXTENDS, False, replace(found(SMALL), extended=vol()), "S1", Provisioned("Cinder volume of 2 GiB is available")),
    ("C7-settled-below-the-size-fails-and-retries", EXTENDS, False, replace(found(SMALL), extended=SMALL), "C7", Fail(NOT_EXTENDED, R.ERRORED)),
]  # fmt: skip


TARGET_ROWS = AT_ONCE_ROWS + EXTEND_ROWS


@pytest.mark.parametrize(
    ("row", "target", "full", "obs", "rule", "action"), TARGET_ROWS, ids=[r[0] for r in TARGET_ROWS]
)
def test_rule_for_a_target(
    row: str, target: Target, full: bool, obs: Observation, rule: str, action: Action
) -> None:
    d = create(spec(), target, full, obs)
    assert (d.rule, d.action) == (rule, action)


def test_the_extend_step_says_online_for_an_attached_volume() -> None:
    d = create(spec(), EXTENDS, False, found(vol("in-use", size=1)))
    assert d.step == f"C6: extend volume {NAME} online (attached) from 1 to 2 GiB"


def imported(**by: Any) -> VolumeSpec:
    return spec(managementPolicy="unmanaged", **{"import": by})


BY_NAME, BY_ID = imported(filter={"name": "legacy-data"}), imported(id="vol-9")
WHERE = "project 'p' in domain 'Default'"
OBSERVE_ROWS: list[tuple[str, VolumeSpec, Observation, str, Action]] = [
    ("O1 by name", BY_NAME, Observation(), "O1", io.FindVolumes(scope=SCOPE, name="legacy-data")),
    ("O1 by id", BY_ID, Observation(), "O1", io.FindVolumes(scope=SCOPE, name="", id="vol-9")),
    (
        "O2",
        BY_ID,
        found(project=False),
        "O2",
        Fail(f"{WHERE} does not exist in Keystone — retrying", R.PROVISIONING),
    ),
    (
        "O3",
        BY_NAME,
        found(),
        "O3",
        Fail(
            f"no Cinder volume with name legacy-data in {WHERE}: nothing to observe; fix spec.import (a new "
            "resource) or create the volume — retrying",
            R.ERRORED,
        ),
    ),
    ("S1 observed", BY_ID, found(vol()), "S1", Provisioned("Cinder volume of 2 GiB is available")),
    (
        "S3 observed",
        BY_ID,
        found(vol("extending")),
        "S3",
        Wait("waiting for Cinder: the volume is extending"),
    ),
]


@pytest.mark.parametrize(
    ("row", "volume_spec", "obs", "rule", "action"), OBSERVE_ROWS, ids=[r[0] for r in OBSERVE_ROWS]
)
def test_observe_rule(row: str, volume_spec: VolumeSpec, obs: Observation, rule: str, action: Action) -> None:
    d = observe_import(volume_spec, TARGET, obs)
    assert (d.rule, d.action) == (rule, action)


def test_O4_two_volumes_named_as_imported_are_a_consistency_error_naming_the_imported_name() -> None:
    d = observe_import(BY_NAME, TARGET, found(*DUPLICATES))
    assert d.rule == "O4" and isinstance(d.action, Fail) and d.action.reason == R.ERRORED
    assert "2 Cinder volumes are named legacy-data" in d.action.message


def test_an_observed_volume_whatever_its_metadata_is_never_updated() -> None:
    """C5 would rewrite drifted osprov metadata; an imported volume is only read (S1, no UpdateMetadata)."""
    d = observe_import(BY_ID, TARGET, found(vol(metadata={"owner": "someone else"})))
    assert d.rule == "S1" and not isinstance(d.action, io.UpdateMetadata)


def test_observed_volume_is_what_the_status_reports() -> None:
    assert create(spec(), TARGET, False, found(vol("creating"))).observed == vol("creating")
    assert create(spec(), TARGET, False, found()).observed is None  # C3: nothing observed yet


def test_volume_class_becomes_the_volume_type() -> None:
    d = create(spec(volumeClassID="ssd-1"), TARGET, False, found())
    assert isinstance(d.action, io.CreateVolume) and d.action.volume_type == "ssd-1"


ATTACHED = (
    "the volume is attached to a server; detach it (remove it from the Server's volumes) and deletion "
    "continues — retrying"
)
DELETE_ROWS: list[tuple[str, Observation, str, Action]] = [
    ("D1-find-by-exact-name", Observation(), "D1", io.FindVolumes(scope=SCOPE, name=NAME)),
    ("D1-project-never-realised-is-done", found(project=False), "D1", Done()),
    ("D2-no-exact-match-is-done", found(), "D2", Done()),
    (
        "D2-two-exact-matches-fail",
        found(*DUPLICATES),
        "D2",
        Fail(DUPLICATE_MESSAGE, R.DEPROVISIONING, "duplicate Cinder volumes", DUPLICATES),
    ),
    ("D3-available-is-deleted", found(vol()), "D3", io.DeleteVolume(scope=SCOPE, id="vol-1")),
    ("D3-error-is-deletable", found(vol("error")), "D3", io.DeleteVolume(scope=SCOPE, id="vol-1")),
    (
        "D3-after-the-delete-wait-for-absence",
        Observation(lookup=found(vol()).lookup, volume=vol()),
        "D3",
        Wait(DELETE_WAIT),
    ),
    ("D4-in-use-fails", found(vol("in-use")), "D4", Fail(ATTACHED, R.DEPROVISIONING)),
    (
        "D5-error-deleting-fails-errored",
        found(vol("error_deleting")),
        "D5",
        Fail(io.ERROR_MESSAGE, R.ERRORED, ERROR_LOG, (vol("error_deleting"),)),
    ),
    ("D6-deleting-waits", found(vol("deleting")), "D6", Wait(DELETE_WAIT)),
    ("D6-creating-waits-until-it-settles", found(vol("creating")), "D6", Wait(DELETE_WAIT)),
]


@pytest.mark.parametrize(("row", "obs", "rule", "action"), DELETE_ROWS, ids=[r[0] for r in DELETE_ROWS])
def test_delete_rule(row: str, obs: Observation, rule: str, action: Action) -> None:
    d = delete(spec(), TARGET, obs)
    assert (d.rule, d.action) == (rule, action)


def test_error_details_never_reach_the_user_visible_text() -> None:
    for d in (
        create(spec(), TARGET, False, found(vol("error_managing"))),
        delete(spec(), TARGET, found(vol("error_deleting"))),
    ):
        shown = d.what + (d.action.message if isinstance(d.action, Fail) else "")
        assert "error_managing" not in shown and "error_deleting" not in shown and "vol-1" not in shown
