"""The Keystone sweep (workflows/keystone/sweep.py), row by row, on the time-skipping server.

A converged Keystone resource keeps no resync timer; its objects' workflows report to the sweep, whose scan
(here: the real comparison rules against the fake Keystone, tests/workflows/fakes.py) wakes only the objects
that drifted. On real Keystone: the "by hand" tests of tests/integration/test_identity_users.py,
test_identity_grants.py and test_identity_endpoints.py.
"""

from __future__ import annotations

from typing import Any

import pytest
from temporalio.client import WorkflowExecutionStatus

from osprov.activities import keystone_sweep
from osprov.api import keystone_io as io
from osprov.api import ownership as own
from osprov.api import sweep as sw
from osprov.api.operations import PAUSED
from osprov.api.ownership import ObjectKey
from osprov.workflows.keystone.sweep import WAKE_RETRY
from tests.workflows.harness import CONFIG, Harness, eventually
from tests.workflows.test_ownership import ready

PERIOD = CONFIG.resync_seconds
KEYSTONE_CALLS = (io.FIND.name, io.CREATE.name, io.UPDATE.name, io.CHECK_GRANT.name, io.PROBE_PASSWORD.name)


def keystone_calls(h: Harness) -> int:
    return sum(h.cloud.count(name) for name in KEYSTONE_CALLS) + h.cloud.count(own.POLICY.name)


@pytest.fixture(autouse=True)
def default_domain(h: Harness) -> None:
    h.cloud.add("domain", name="Default", enabled=True)


async def converged(h: Harness, kind: str, spec: dict[str, Any]) -> Any:
    wf = await h.apply(kind, spec)
    cond = await ready(h, wf)
    assert cond["status"] == "True", cond
    await eventually(lambda: h.cloud.count(io.FIND.name) > 0, "observed")
    return wf


async def scans_after(h: Harness, periods: int) -> None:
    before = h.cloud.count(sw.SCAN.name)
    await h.env.sleep(PERIOD * periods + 1)
    await eventually(lambda: h.cloud.count(sw.SCAN.name) >= before + periods, f"{periods} scans")


async def test_sweep_idle_a_converged_resource_makes_no_call_of_its_own_per_tick(h: Harness) -> None:
    wf = await converged(h, "Project", {"name": "p", "domain": "Default", "description": "v1"})
    state = await h.state(wf)
    assert state.resync_at is None  # no timer of its own: the sweep watches its object
    await scans_after(h, 1)  # by then the object's own first steps are long done
    calls, statuses = keystone_calls(h), len(h.cloud.statuses)
    await scans_after(h, 3)
    assert keystone_calls(h) == calls  # only the scans (one list per kind) looked at Keystone
    assert len(h.cloud.statuses) == statuses


async def test_sweep_drift_wakes_only_the_drifted_object_which_repairs_it(h: Harness) -> None:
    await converged(h, "Project", {"name": "a", "domain": "Default", "description": "mine"})
    await converged(h, "Project", {"name": "b", "domain": "Default", "description": "mine"})
    a = next(p for p in h.cloud.of("project") if p.fields["name"] == "a")
    finds = len(h.cloud.finds)
    h.cloud.objects["project"][a.id] = a.model_copy(update={"fields": a.fields | {"description": "hand"}})
    await scans_after(h, 1)
    await eventually(lambda: h.cloud.objects["project"][a.id].fields["description"] == "mine", "repaired")
    # The scan named only the drifted project, whose workflow re-read it by ID (b's object may still be
    # finishing its own first steps: what matters is that the sweep woke only a).
    assert h.cloud.drifted == [ObjectKey(kind="project", domain="Default", name="a").path]
    assert io.Find(kind="project", filters={"id": a.id}) in h.cloud.finds[finds:]
    await scans_after(h, 1)
    assert h.cloud.count(io.UPDATE.name) == 1  # the repaired object reported what it wrote: no new drift


async def test_sweep_an_object_deleted_outside_is_created_again(h: Harness) -> None:
    wf = await converged(h, "Domain", {"name": "gone"})
    [dom] = [d for d in h.cloud.of("domain") if d.fields["name"] == "gone"]
    del h.cloud.objects["domain"][dom.id]
    await scans_after(h, 1)
    await eventually(lambda: len(h.cloud.of("domain")) == 2, "created again")
    again = next(d.id for d in h.cloud.of("domain") if d.fields["name"] == "gone")
    await eventually(lambda: again in str(h.written[wf.id]), "the new ID in the status")


async def test_sweep_a_password_changed_outside_is_set_again_without_a_failed_login(h: Harness) -> None:
    h.cloud.secrets["ns/cinder-pw/OS_PASSWORD"] = "s3cret"
    spec = {"name": "cinder", "domain": "Default", "passwordSecret": {"name": "cinder-pw"}}
    await converged(h, "User", spec)
    [user] = h.cloud.of("user")
    assert h.cloud.passwords[user.id] == "s3cret"
    sets = h.cloud.count(io.SET_PASSWORD.name)
    await scans_after(h, 1)
    assert h.cloud.count(io.SET_PASSWORD.name) == sets  # the scan's login succeeded: nothing to do
    h.cloud.passwords[user.id] = "changed by hand"
    await scans_after(h, 1)
    await eventually(lambda: h.cloud.passwords[user.id] == "s3cret", "password set again")


@pytest.mark.parametrize("kind", ["Domain"])
async def test_sweep_forgets_an_object_whose_last_claimant_is_gone(h: Harness, kind: str) -> None:
    spec = {"name": "short-lived", "deletionPolicy": "delete"}
    wf = await h.apply(kind, spec, finalizers=["keystone.osh.openstack.org/finalizer"])
    await ready(h, wf)
    await eventually(lambda: _n(h, 1), "reported")
    await h.signal(wf, 1, spec, deleting=True, finalizers=["keystone.osh.openstack.org/finalizer"])
    assert await wf.result() == "deleted"
    await eventually(lambda: _n(h, 0), "forgotten")


async def _n(h: Harness, n: int) -> bool:
    return await h.swept() == n


async def test_sweep_a_paused_resource_s_object_is_not_repaired_until_it_resumes(h: Harness) -> None:
    """An operator pauses a resource to work on its object by hand: the sweep does not undo that."""
    spec = {"name": "held", "domain": "Default", "description": "mine"}
    wf = await converged(h, "Project", spec)
    await eventually(lambda: _n(h, 1), "reported")
    await h.signal(wf, 1, spec, annotations={PAUSED: "true"})
    await eventually(lambda: _n(h, 0), "the held object left the sweep")
    p = next(p for p in h.cloud.of("project") if p.fields["name"] == "held")
    finds = h.cloud.count(io.FIND.name)
    h.cloud.objects["project"][p.id] = p.model_copy(update={"fields": p.fields | {"description": "by hand"}})
    await h.env.sleep(PERIOD * 2 + 1)
    assert h.cloud.objects["project"][p.id].fields["description"] == "by hand"
    assert h.cloud.count(io.FIND.name) == finds  # not even a read while paused
    await h.signal(wf, 1, spec)  # the annotation removed: a full pass claims again
    await eventually(lambda: h.cloud.objects["project"][p.id].fields["description"] == "mine", "repaired")
    await eventually(lambda: _n(h, 1), "back in the sweep")


# ----- shards: no workflow holds every report -------------------------------------------------------
async def _lead(h: Harness) -> sw.SweepState:
    handle = h.env.client.get_workflow_handle(sw.workflow_id(h.keystone, h.queue))
    state = await handle.query(sw.QUERY_SWEPT, result_type=sw.SweepState)
    assert state is not None
    return state


async def test_sweep_reports_go_to_their_shard_and_the_lead_holds_none(h: Harness) -> None:
    """Before: the lead held every report, and its state (carried by continue-as-new, read by the scan's
    query) passed Temporal's 2 MB payload limit at about 3,600 objects."""
    for name in ("p1", "p2", "p3"):
        await converged(h, "Project", {"name": name, "domain": "Default"})
    await eventually(lambda: _n(h, 3), "reported")
    lead = await _lead(h)
    assert lead.swept == {}
    _, located = await keystone_sweep.read_all(h.env.client, h.keystone, h.queue)
    for path, (_, table) in located.items():
        assert table == sw.shard_workflow_id(h.keystone, h.queue, sw.shard_of(path))
    assert set(lead.shards) == {sw.shard_of(path) for path in located}


async def test_sweep_scans_the_shards_reports_and_wakes_a_drifted_object(h: Harness) -> None:
    await converged(h, "Project", {"name": "sharded", "domain": "Default", "description": "mine"})
    await eventually(lambda: _n(h, 1), "reported")
    p = next(p for p in h.cloud.of("project") if p.fields["name"] == "sharded")
    h.cloud.objects["project"][p.id] = p.model_copy(update={"fields": p.fields | {"description": "by hand"}})
    await scans_after(h, 1)
    await eventually(lambda: h.cloud.objects["project"][p.id].fields["description"] == "mine", "repaired")


async def test_sweep_a_lead_report_from_before_the_shards_is_dropped_once_its_shard_holds_it(
    h: Harness,
) -> None:
    """An older worker reported to the lead itself; once the object reports to its shard, the lead's copy
    is stale (it would wake the object on every change) and the next scan drops it."""
    await converged(h, "Project", {"name": "upgraded", "domain": "Default"})
    await eventually(lambda: _n(h, 1), "reported")
    _, located = await keystone_sweep.read_all(h.env.client, h.keystone, h.queue)
    [(swept, _)] = located.values()
    lead = h.env.client.get_workflow_handle(sw.workflow_id(h.keystone, h.queue))
    await lead.signal(sw.SIGNAL_REPORT, sw.Report(keystone=h.keystone, swept=swept))  # as before the shards
    await eventually(lambda: _lead_holds(h, 1), "the lead's own copy")
    await scans_after(h, 1)
    await eventually(lambda: _lead_holds(h, 0), "the stale copy dropped")
    assert await h.swept() == 1


async def _lead_holds(h: Harness, n: int) -> bool:
    return len((await _lead(h)).swept) == n


def test_sweep_shard_payloads_stay_far_below_temporal_s_limits_at_10_000_objects() -> None:
    """The sizing behind SHARDS: 10,000 reports of the size a Project's is; the biggest shard's state (its
    continue-as-new input, the scan's query answer) and the lead's, against the 512 KB warning."""
    shards: dict[int, dict[str, sw.Swept]] = {}
    for i in range(10_000):
        key = ObjectKey(kind="project", name=f"project-{i}", domain="0123456789abcdef0123456789abcdef")
        swept = sw.Swept(
            key=key, workflow_id=key.workflow_id("keystone", "osprov-ns"), id=f"{i:032x}", digest="0" * 16
        )
        shards.setdefault(sw.shard_of(key.path), {})[key.path] = swept
    biggest = max(len(sw.SweepState(keystone="keystone", swept=t).model_dump_json()) for t in shards.values())
    lead = sw.SweepState(keystone="keystone", shards=dict.fromkeys(range(sw.SHARDS), 600.0))
    assert len(shards) == sw.SHARDS
    assert biggest < 512 * 1024 // 4, biggest
    assert len(lead.model_dump_json()) < 4096


async def test_sweep_a_shard_whose_wake_of_the_lead_fails_keeps_its_reports_and_tells_it_later(
    h: Harness,
) -> None:
    h.cloud.fail_wakes = 5  # every attempt of the first wake (DEFAULT_RETRY's 5): Temporal unreachable
    await converged(h, "Project", {"name": "kept", "domain": "Default"})
    [shard] = [w for w in h.cloud.object_workflows if w.startswith(sw.SHARD_WORKFLOW_TYPE + "/")]
    await eventually(lambda: h.cloud.fail_wakes == 0, "the failed wake")
    await h.sleep_settled(WAKE_RETRY.total_seconds() + 1)
    await eventually(lambda: _n(h, 1), "the lead told; the shard's report kept")
    description = await h.env.client.get_workflow_handle(shard).describe()
    assert description.status == WorkflowExecutionStatus.RUNNING


async def test_sweep_a_shard_the_lead_was_not_told_of_is_still_scanned(h: Harness) -> None:
    """In a rolling upgrade an older lead drops a shard's wake (it had no handler): every scan reads every
    shard, and its answer gives the lead the shards' periods again."""
    await converged(h, "Project", {"name": "untold", "domain": "Default", "description": "mine"})
    await eventually(lambda: _n(h, 1), "reported")
    [shard] = (await _lead(h)).shards
    lead = h.env.client.get_workflow_handle(sw.workflow_id(h.keystone, h.queue))
    await lead.signal(sw.SIGNAL_WAKE, sw.Wake(keystone=h.keystone, shard=shard, period_seconds=None))
    await eventually(lambda: _lead_knows(h, set()), "the lead believes no shard holds reports")
    p = next(p for p in h.cloud.of("project") if p.fields["name"] == "untold")
    h.cloud.objects["project"][p.id] = p.model_copy(update={"fields": p.fields | {"description": "by hand"}})
    await scans_after(h, 1)
    await eventually(lambda: h.cloud.objects["project"][p.id].fields["description"] == "mine", "repaired")
    await eventually(lambda: _lead_knows(h, {shard}), "the scan told the lead of the shard again")


async def test_sweep_a_new_shard_records_its_report_at_once_and_takes_its_first_task_later(
    h: Harness,
) -> None:
    """A shard's start carries SHARD_FIRST_TASK_DELAY (activities/keystone_sweep.py): the report is in
    its history from the start, and its task, its wake of the lead and the lead's task come after the
    bundle's own steps instead of beside them. The report still reaches the scan."""
    await converged(h, "Project", {"name": "deferred", "domain": "Default"})
    [shard] = [w for w in h.cloud.object_workflows if w.startswith(sw.SHARD_WORKFLOW_TYPE + "/")]
    history = await h.env.client.get_workflow_handle(shard).fetch_history()
    started = history.events[0].workflow_execution_started_event_attributes
    assert started.first_workflow_task_backoff.ToTimedelta() == keystone_sweep.SHARD_FIRST_TASK_DELAY
    assert history.events[1].workflow_execution_signaled_event_attributes.signal_name == sw.SIGNAL_REPORT
    await eventually(lambda: _n(h, 1), "the report in the lead's next scan")


def test_sweep_a_shard_s_first_task_waits_at_most_one_resync_period() -> None:
    key = ObjectKey(kind="project", name="p", domain="d")
    for period, delay in ((600.0, 5.0), (2.0, 2.0), (0.5, 0.5)):
        swept = sw.Swept(key=key, workflow_id="w", period_seconds=period)
        wait = keystone_sweep.shard_start_delay(sw.Report(keystone="k", swept=swept))
        assert wait.total_seconds() == delay


async def _lead_knows(h: Harness, shards: set[int]) -> bool:
    return set((await _lead(h)).shards) == shards
