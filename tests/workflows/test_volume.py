"""The Volume decision tables (workflows/volume.py) on the time-skipping server with a stubbed Cinder.

Tests are named by the step labels of the tables: C (create), S (observe), D (delete).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from temporalio.client import WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from osprov.api import cinder_io as io
from osprov.api import errors as api_errors
from osprov.api.messages import SIGNAL_RESOURCE_CHANGED, ResourceChange
from osprov.workflows.volume import POLL_MAX_SECONDS, poll_delay
from osprov.workflows.volume_decisions import DELETE_WAIT
from tests.workflows.fakes_cinder import FINALIZER, REGION, CinderHarness, cinder_harness
from tests.workflows.harness import CONFIG, skip
from tests.workflows.history import current_run, scheduled_activities

UID = "5e1f0c3a-0000-4000-8000-000000000001"
NAME = io.volume_name(UID)


def spec(**extra: Any) -> dict[str, Any]:
    return {"project": {"name": "p", "domain": "Default"}, "size": 2, "deletionPolicy": "delete", **extra}


@pytest_asyncio.fixture
async def h(tenv: WorkflowEnvironment) -> AsyncIterator[CinderHarness]:
    async for hs in cinder_harness(tenv):
        yield hs


async def provisioned(h: CinderHarness, **extra: Any) -> WorkflowHandle[Any, Any]:
    h.cinder.add_project()
    wf = await h.apply("Volume", spec(**extra), uid=UID, name="data")
    await h.until(lambda: h.condition().get("reason") == "Provisioned", "volume provisioned")
    return wf


async def delete(h: CinderHarness, wf: WorkflowHandle[Any, Any], **extra: Any) -> None:
    await h.signal(wf, 1, spec(**extra), deleting=True, finalizers=[FINALIZER])


def test_poll_delay_starts_short_and_is_capped() -> None:
    delays = [poll_delay(n) for n in range(12)]
    assert delays[:3] == [0.5, 0.75, 1.125]
    assert delays == sorted(delays) and delays[-1] == POLL_MAX_SECONDS


def test_tags_come_first_and_cannot_override_system_keys() -> None:
    tags = {"team": "a", "uid": "evil", "kind": "evil"}
    system = {"kind": "Volume", "uid": UID, "region": REGION}
    meta = io.volume_metadata(tags, system)
    assert meta["osprov.uid"] == UID and meta["osprov.kind"] == "Volume"
    assert meta["osprov.tag.uid"] == "evil"
    keys = list(meta)
    assert keys.index("osprov.tag.uid") < keys.index("osprov.kind")  # linkage keys written last
    with pytest.raises(ValueError, match="unknown system metadata keys"):
        io.volume_metadata({}, {"owner": "x"})


async def test_C3_S3_S1_create_waits_until_available_and_fills_status(h: CinderHarness) -> None:
    h.cinder.create_script = ["creating", "downloading", "available"]
    await provisioned(h, tags={"team": "storage"})
    [vol] = h.cinder.named(NAME)
    assert vol.size == 2 and vol.status == "available"
    assert vol.metadata["osprov.tag.team"] == "storage"
    assert vol.metadata["osprov.uid"] == UID and vol.metadata["osprov.project"] == "Default/p"
    assert vol.metadata["osprov.region"] == REGION and vol.metadata["osprov.namespace"] == "ns"
    assert h.status()["volumeID"] == vol.id and h.status()["size"] == 2
    # Accepted was not done: Provisioning was published while Cinder was still creating.
    reasons = [s["conditions"][0]["reason"] for s in h.cloud.statuses]
    assert reasons[0] == "Provisioning" and reasons[-1] == "Provisioned"
    # C3 at once: the create-if-absent made the only lookup (before, a find_volumes activity came first).
    assert h.cinder.count(io.CREATE_VOLUME.name) == 1 and h.cinder.count(io.FIND_VOLUMES.name) == 0
    assert h.cinder.count(io.AWAIT_VOLUME.name) == 1  # the wait was one activity, not a pass per read


async def test_S3_the_wait_keeps_the_cadence_of_the_task_that_saw_cinder_busy(
    h: CinderHarness,
) -> None:
    """The create answered "creating" in this pass: the wait carries the start of the workflow task that
    decided to wait, so its second read comes one interval after it (activities/cloud.py, poll), and the
    workflow's own round trip to the wait is not added to its reads."""
    h.cinder.create_script = ["creating", "available"]
    wf = await provisioned(h)
    [wait] = await scheduled_activities(h.env.client, wf.id, io.AWAIT_VOLUME.name, io.AwaitVolume)
    assert wait.within_its_task(wait.input.busy_seen_at)


async def test_C4_existing_exact_name_is_adopted_not_duplicated(h: CinderHarness) -> None:
    scope = h.cinder.add_project()
    existing = h.cinder.add(NAME, scope, "available")
    await provisioned(h)
    # C3 at once asked the create-if-absent, which adopted it: still the one volume.
    assert [v.id for v in h.cinder.named(NAME)] == [existing.id] and len(h.cinder.volumes) == 1
    assert h.status()["volumeID"] == existing.id


async def test_C5_tag_changes_reach_cinder_and_dropped_tags_are_removed(h: CinderHarness) -> None:
    wf = await provisioned(h, tags={"team": "a", "tier": "gold"})
    [vol] = h.cinder.named(NAME)
    vol.metadata["user-key"] = "set by hand"  # not osprov's: left alone
    await h.signal(wf, 2, spec(tags={"team": "b"}))
    await h.until(lambda: h.status().get("observedGeneration") == 2, "generation 2 reconciled")
    assert vol.metadata["osprov.tag.team"] == "b" and "osprov.tag.tier" not in vol.metadata
    assert vol.metadata["user-key"] == "set by hand" and vol.metadata["osprov.uid"] == UID
    assert h.cinder.count(io.UPDATE_METADATA.name) == 1
    # Up to date: the next full pass (the resync) writes nothing.
    finds = h.cinder.count(io.FIND_VOLUMES.name)
    await h.env.sleep(601)
    await h.until(lambda: h.cinder.count(io.FIND_VOLUMES.name) > finds, "resync read")
    assert h.cinder.count(io.UPDATE_METADATA.name) == 1


def test_metadata_drift_ignores_foreign_keys_and_sees_dropped_tags() -> None:
    system = {"kind": "Volume", "uid": UID}
    current = io.volume_metadata({"a": "1"}, system | {"region": REGION}) | {"foreign": "x"}
    assert not io.metadata_drift(current, {"a": "1"}, system)
    assert io.metadata_drift(current, {}, system)  # tag a dropped
    assert io.metadata_drift(current, {"a": "2"}, system)
    assert io.metadata_drift(current | {"osprov.uid": "other"}, {"a": "1"}, system)


async def test_C2_two_exact_matches_fail_closed_then_recover(h: CinderHarness) -> None:
    scope = h.cinder.add_project()
    first, second = h.cinder.add(NAME, scope), h.cinder.add(NAME, scope)
    await h.apply("Volume", spec(), uid=UID)
    await h.until(lambda: h.condition().get("reason") == "Errored", "consistency error reported")
    # C3 at once was refused (two matches); C1's lookup then let C2 answer, with its message.
    assert "osprov acts only on a unique match" in h.condition()["message"]
    assert len(h.cinder.volumes) == 2 and h.cinder.count(io.FIND_VOLUMES.name) >= 1
    del h.cinder.volumes[second.id]  # an operator removes the extra one; the retry adopts the other
    await h.until(lambda: h.condition().get("reason") == "Provisioned", "adopted after the fix", 600)
    assert h.status()["volumeID"] == first.id


async def test_C1_missing_project_is_reported_then_retried(h: CinderHarness) -> None:
    await h.apply("Volume", spec(), uid=UID)
    await h.until(lambda: bool(h.condition()), "project reported")
    cond = h.condition()
    assert cond["status"] == "False" and cond["reason"] == "Provisioning"
    assert "project 'p' in domain 'Default' does not exist in Keystone yet" in cond["message"]
    assert not h.cinder.volumes and h.cinder.count(io.FIND_VOLUMES.name) >= 1  # C1 answered after the look
    h.cinder.add_project()
    await h.until(
        lambda: h.condition().get("reason") == "Provisioned", "created once the project exists", 600
    )
    assert len(h.cinder.named(NAME)) == 1


async def test_S2_error_status_is_terminal_with_the_user_safe_message(h: CinderHarness) -> None:
    h.cinder.create_script = ["creating", "error_managing"]
    h.cinder.add_project()
    wf = await h.apply("Volume", spec(), uid=UID)
    await h.until(lambda: h.condition().get("reason") == "Errored", "error reported")
    cond = h.condition()
    assert cond["status"] == "False" and cond["message"] == "provider volume entered an error state"
    assert "error_managing" not in str(h.status())
    reads = h.cinder.count(io.FIND_VOLUMES.name)
    await h.env.sleep(300)  # terminal: no polling (only the periodic resync, at 600s, reads again)
    assert h.cinder.count(io.FIND_VOLUMES.name) == reads
    assert (await h.state(wf)).retry_at is None


async def test_S3_unfamiliar_status_is_never_convergence_and_polls_back_off(h: CinderHarness) -> None:
    h.cinder.create_script = ["creating", "something_new"]
    h.cinder.add_project()
    await h.apply("Volume", spec(), uid=UID)
    await h.until(lambda: "unfamiliar" in h.condition().get("message", ""), "unfamiliar state reported")
    assert h.condition()["reason"] == "Provisioning"
    before = h.cinder.count(io.FIND_VOLUMES.name)
    await h.env.sleep(120)
    polled = h.cinder.count(io.FIND_VOLUMES.name) - before
    assert 8 <= polled <= 20, polled  # capped at one read per 10 s, never converged
    assert h.condition()["reason"] == "Provisioning" and "volumeID" in h.status()


async def test_S1_in_use_counts_as_provisioned(h: CinderHarness) -> None:
    scope = h.cinder.add_project()
    h.cinder.add(NAME, scope, "in-use")
    await provisioned(h)
    assert "in-use" in h.condition()["message"]


async def test_D3_delete_waits_until_a_later_read_confirms_absence(h: CinderHarness) -> None:
    wf = await provisioned(h)
    h.cinder.delete_script = ["deleting", "deleting", "deleting"]
    await delete(h, wf)
    assert await wf.result() == "deleted"
    assert h.cinder.named(NAME) == [] and h.cinder.count(io.DELETE_VOLUME.name) == 1
    assert h.condition()["reason"] == "Deprovisioning"
    assert h.cloud.count("kube.remove_finalizer") == 1


async def test_D6_stuck_delete_keeps_every_run_short_and_ends_when_cinder_does(h: CinderHarness) -> None:
    """Cinder never finishes the delete: re-read one pass at a time (no failure, no backoff to minutes);
    continue-as-new bounds each run's history."""
    passes = 10
    h.cinder.add_project()
    wf = await h.apply(
        "Volume", spec(), uid=UID, config=CONFIG.model_copy(update={"max_passes_per_run": passes})
    )
    await h.until(lambda: h.condition().get("reason") == "Provisioned", "volume provisioned")
    h.cinder.delete_script = ["deleting"] * 10**6  # each pass's wait reads up to 120 times
    first = await current_run(h.env.client, wf.id)
    await delete(h, wf)
    await skip(h.env, 30 * 60)
    run = await current_run(h.env.client, wf.id)
    assert run.run_id != first.run_id  # the delete went on across runs
    assert len(run.events) < passes * 20, len(run.events)  # a pass: a read, a minute-long wait, a timer
    assert h.cinder.count(io.DELETE_VOLUME.name) == 1
    assert h.condition()["reason"] == "Deprovisioning" and h.condition()["message"] == DELETE_WAIT
    [vol] = h.cinder.named(NAME)
    vol.script.clear()  # Cinder finishes: the next read no longer finds it
    assert await wf.result() == "deleted"


async def test_S3_a_deletion_during_a_long_wait_cuts_the_wait_short(h: CinderHarness) -> None:
    """A wait on Cinder is one activity, but never a deaf one: news (here the deletion) cancels it and the
    next pass runs at once, instead of after the minute the wait may last."""
    h.cinder.add_project()
    h.cinder.create_script = ["creating"]  # Cinder stays busy …
    h.cinder.slow_waits = 1  # … and the first wait for it lasts a minute
    wf = await h.apply("Volume", spec(), uid=UID, name="data", finalizers=[FINALIZER])
    await h.until(lambda: h.cinder.count(io.AWAIT_VOLUME.name) == 1, "waiting on Cinder")
    [vol] = h.cinder.named(NAME)
    vol.status, vol.script = "available", []
    # Signalled directly: the harness's signal waits for a settled run, and this one is mid-activity
    # (no timer is pending, so the test server's timer race that guard avoids cannot happen).
    ref = (await h.state(wf)).ref
    change = ResourceChange(ref=ref, generation=1, spec=spec(), deleting=True, finalizers=[FINALIZER])
    await wf.signal(SIGNAL_RESOURCE_CHANGED, change)
    await h.until(lambda: h.cinder.count(io.DELETE_VOLUME.name) == 1, "the delete sent", real_s=20)
    assert await wf.result() == "deleted"


async def test_D2_volume_already_gone_is_success(h: CinderHarness) -> None:
    wf = await provisioned(h)
    h.cinder.volumes.clear()
    await delete(h, wf)
    assert await wf.result() == "deleted"
    assert h.cinder.count(io.DELETE_VOLUME.name) == 0


async def test_D1_project_that_never_existed_is_success(h: CinderHarness) -> None:
    wf = await h.apply("Volume", spec(), uid=UID, deleting=True, finalizers=[FINALIZER])
    assert await wf.result() == "deleted"
    assert h.cinder.count(io.DELETE_VOLUME.name) == 0 and h.cinder.count(io.CREATE_VOLUME.name) == 0


async def test_D6_creating_volume_is_deleted_once_it_settles(h: CinderHarness) -> None:
    h.cinder.create_script = ["creating", "creating", "creating", "available"]
    h.cinder.add_project()
    wf = await h.apply("Volume", spec(), uid=UID)
    await h.until(lambda: h.cinder.count(io.CREATE_VOLUME.name) == 1, "create accepted")
    await delete(h, wf)
    assert await wf.result() == "deleted"
    assert h.cinder.named(NAME) == [] and h.cinder.count(io.DELETE_VOLUME.name) == 1


async def test_D4_attached_volume_blocks_delete_until_detached(h: CinderHarness) -> None:
    scope = h.cinder.add_project()
    vol = h.cinder.add(NAME, scope, "in-use")
    wf = await provisioned(h)
    await delete(h, wf)
    await h.until(lambda: "attached to a server" in h.condition().get("message", ""), "attachment reported")
    assert h.condition()["reason"] == "Deprovisioning" and h.cinder.count(io.DELETE_VOLUME.name) == 0
    vol.status = "available"  # detached
    await h.until(lambda: h.cinder.named(NAME) == [], "deleted after the detach", 600)
    assert await wf.result() == "deleted"


async def test_D5_error_deleting_reports_errored_and_retries(h: CinderHarness) -> None:
    scope = h.cinder.add_project()
    vol = h.cinder.add(NAME, scope, "available")
    wf = await provisioned(h)
    vol.status = "error_deleting"
    await delete(h, wf)
    await h.until(lambda: h.condition().get("reason") == "Errored", "error reported")
    assert h.condition()["message"] == "provider volume entered an error state"
    vol.status = "available"  # an operator resets the volume
    await h.until(lambda: h.cinder.named(NAME) == [], "deleted after the reset", 600)
    assert await wf.result() == "deleted"


async def test_transient_activity_failure_is_retried_with_a_provisioning_reason(h: CinderHarness) -> None:
    h.cinder.add_project()
    h.cinder.fail_next[io.CREATE_VOLUME.name] = api_errors.UNAUTHORIZED
    await h.apply("Volume", spec(), uid=UID)
    await h.until(lambda: bool(h.condition()), "failure reported")
    assert h.condition()["reason"] == "Provisioning" and "injected" in h.condition()["message"]
    await h.until(lambda: h.condition().get("reason") == "Provisioned", "retried", 600)
    assert len(h.cinder.named(NAME)) == 1


@pytest.mark.parametrize("by", ["id", "filter"])
async def test_O1_S1_an_imported_volume_is_observed_never_changed_and_outlives_its_resource(
    h: CinderHarness, by: str
) -> None:
    """managementPolicy unmanaged + import: the status mirrors a volume osprov did not create; no create,
    update or delete, whatever its metadata; deleting the resource leaves the volume as it was."""
    scope = h.cinder.add_project()
    legacy = h.cinder.add("legacy-data", scope, "available")
    legacy.metadata = {"owner": "another tool"}
    chosen = {"id": legacy.id} if by == "id" else {"filter": {"name": "legacy-data"}}
    imported = spec(managementPolicy="unmanaged", deletionPolicy="retain", **{"import": chosen})
    wf = await h.apply("Volume", imported, uid=UID, name="data")
    await h.until(lambda: h.condition().get("reason") == "Provisioned", "the imported volume observed")
    assert h.status()["volumeID"] == legacy.id and h.condition()["status"] == "True"
    legacy.status = "in-use"  # changed outside osprov: the resync reports it, nothing is written
    await skip(h.env, 601)
    writes = (io.CREATE_VOLUME.name, io.UPDATE_METADATA.name, io.DELETE_VOLUME.name)
    assert [c for c in h.cinder.calls if c in writes] == []
    await h.signal(wf, 1, imported, deleting=True)
    assert await wf.result() == "deleted"
    assert h.cinder.volumes[legacy.id].status == "in-use"
    assert legacy.metadata == {"owner": "another tool"}
    assert [c for c in h.cinder.calls if c in writes] == []


async def test_O3_an_import_that_matches_nothing_says_so_and_creates_nothing(h: CinderHarness) -> None:
    h.cinder.add_project()
    imported = spec(managementPolicy="unmanaged", deletionPolicy="retain", **{"import": {"id": "vol-404"}})
    await h.apply("Volume", imported, uid=UID, name="data")
    await h.until(lambda: h.condition().get("reason") == "Errored", "the missing import reported")
    assert "no Cinder volume with ID vol-404" in h.condition()["message"]
    assert h.cinder.count(io.CREATE_VOLUME.name) == 0 and h.cinder.volumes == {}
