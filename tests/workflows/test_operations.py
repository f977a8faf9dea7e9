"""Events, pause, reconcile-now and spec.resyncPeriod in the entity loop (time-skipping server, stubbed
activities, the production workflows)."""

from __future__ import annotations

import uuid

from osprov.api import keystone_io as io
from osprov.api import sweep as sw
from osprov.api.operations import PAUSED, RECONCILE_REQUESTED
from tests.workflows.harness import Harness, eventually

FINALIZER = "keystone.osh.openstack.org/finalizer"


def uid() -> str:
    return str(uuid.uuid4())


async def test_events_mark_what_happened_not_every_pass(h: Harness) -> None:
    """Waiting on a dependency, created, updated: one Event each; a resync that changes nothing, none."""
    project = uid()
    await h.apply("Project", {"name": "p", "domain": "d"}, uid=project, name="p")
    await eventually(lambda: h.cloud.reasons(project) == ["Waiting"], "waiting on the domain")
    assert "domain 'd' does not exist in Keystone yet" in h.cloud.events[-1].event.note
    assert h.cloud.events[-1].event.type == "Normal"
    domain = uid()
    dwf = await h.apply("Domain", {"name": "d"}, uid=domain, name="d")
    await eventually(lambda: h.cloud.reasons(project) == ["Waiting", "Created"], "project created")
    # The domain's Event follows its status write: wait for it rather than race it.
    await eventually(lambda: h.cloud.reasons(domain) == ["Created"], "the domain's one Event")
    project_events = [e for e in h.cloud.events if e.obj.uid == project]
    assert project_events[-1].event.note == "created project p in domain d"
    await h.sleep_settled(601)  # the periodic check (the Keystone sweep's scan): nothing new
    await eventually(lambda: h.cloud.count(sw.SCAN.name) >= 1, "the sweep's scan ran")
    await h.signal(dwf, 2, {"name": "d", "description": "new"})
    await eventually(lambda: h.cloud.reasons(domain) == ["Created", "Updated"], "domain updated")
    assert h.cloud.reasons(project) == ["Waiting", "Created"]
    event = h.cloud.events[-1]
    assert (event.obj.name, event.kind, event.event.note) == ("d", "Domain", "updated domain d")


async def test_an_error_is_one_warning_and_a_recurrence_patches_its_series(h: Harness) -> None:
    role = uid()
    h.cloud.fail_next[io.FIND.name] = "Conflict"
    await h.apply("Role", {"name": "member"}, uid=role)
    await eventually(lambda: h.cloud.reasons(role) == ["ReconcileError"], "the error recorded")
    error = h.cloud.events[-1]
    assert (error.event.type, error.event.note, error.count) == (
        "Warning",
        "injected Conflict for keystone.find",
        1,
    )
    await h.env.sleep(6)  # the retry succeeds
    await eventually(lambda: h.cloud.reasons(role) == ["ReconcileError", "Created"], "recovered")
    # Deleted outside osprov: the sweep's scan wakes the role's object, whose read fails the same way.
    h.cloud.fail_next[io.FIND.name] = "Conflict"
    h.cloud.objects["role"].clear()
    await h.env.sleep(601)
    await eventually(lambda: len(h.cloud.reasons(role)) == 3, "the error again")
    again = h.cloud.events[-1]
    assert (again.name, again.count) == (error.name, 2)  # the same Event, its series patched


async def test_a_paused_resource_calls_nothing_until_the_annotation_goes(h: Harness) -> None:
    domain = uid()
    paused = {PAUSED: "true"}
    wf = await h.apply("Domain", {"name": "d"}, uid=domain, annotations=paused)
    await eventually(lambda: bool(h.cloud.statuses), "the paused status written")
    ready = h.last_ready()
    assert (ready["status"], ready["reason"]) == ("Unknown", "Paused")
    assert h.cloud.statuses[-1]["observedGeneration"] == 0  # nothing reconciled yet
    await h.signal(wf, 2, {"name": "d", "description": "while paused"}, annotations=paused)
    await h.env.sleep(700)  # retries and resyncs would be due by now
    desired = (await h.state(wf)).desired
    assert desired is not None and desired.generation == 2  # the change is recorded …
    # … the condition names the generation that waits (the annotation came first, the change second) …
    assert "generation 2 is not applied" in h.last_ready()["message"]
    assert (
        h.cloud.calls == ["kube.patch_status"] * 2 and h.cloud.object_workflows == set()
    )  # … and nothing else is called
    assert h.cloud.reasons(domain) == ["Paused"]  # one Event
    await h.signal(wf, 2, {"name": "d", "description": "while paused"})
    await eventually(
        lambda: h.last_ready()["reason"] == "Created" or h.last_ready()["status"] == "True", "resumed"
    )
    [made] = h.cloud.of("domain")
    assert made.fields["description"] == "while paused"
    assert h.cloud.statuses[-1]["observedGeneration"] == 2
    # The Event is recorded after the status write that ended the wait above.
    await eventually(lambda: h.cloud.reasons(domain) == ["Paused", "Created"], "the Created Event")


async def test_pausing_a_converged_resource_keeps_its_status_and_holds_its_deletion(h: Harness) -> None:
    domain = uid()
    spec = {"name": "d", "deletionPolicy": "delete"}
    wf = await h.apply("Domain", spec, uid=domain, finalizers=[FINALIZER])
    await eventually(lambda: bool(h.cloud.statuses) and h.last_ready()["status"] == "True", "converged")
    await h.signal(
        wf, 2, spec | {"description": "later"}, finalizers=[FINALIZER], annotations={PAUSED: "true"}
    )
    await eventually(lambda: h.last_ready()["reason"] == "Paused", "paused")
    assert h.last_ready()["status"] == "True" and h.cloud.statuses[-1]["observedGeneration"] == 1
    await h.signal(
        wf,
        2,
        spec | {"description": "later"},
        finalizers=[FINALIZER],
        deleting=True,
        annotations={PAUSED: "true"},
    )
    await h.env.sleep(30)
    assert h.cloud.count(io.UPDATE.name) == 0 and h.cloud.count(io.DELETE.name) == 0
    assert h.cloud.count("kube.remove_finalizer") == 0  # the deletion waits for the pause to end
    await h.signal(wf, 2, spec | {"description": "later"}, finalizers=[FINALIZER], deleting=True)
    assert await wf.result() == "deleted"
    assert h.cloud.of("domain") == [] and h.cloud.count("kube.remove_finalizer") == 1
    assert h.cloud.reasons(domain) == ["Created", "Paused", "Deleting", "Deleted"]


async def test_a_reconcile_request_runs_a_full_pass_now(h: Harness) -> None:
    wf = await h.apply("Service", {"name": "s", "type": "t", "description": "mine"})
    await eventually(lambda: bool(h.cloud.statuses), "created")
    [svc] = h.cloud.of("service")
    h.cloud.objects["service"][svc.id] = svc.model_copy(
        update={"fields": svc.fields | {"description": "hand"}}
    )
    spec = {"name": "s", "type": "t", "description": "mine"}
    await h.env.sleep(5)
    assert h.cloud.of("service")[0].fields["description"] == "hand"  # nothing is due
    await h.signal(wf, 1, spec, annotations={RECONCILE_REQUESTED: "1700000000"})
    await eventually(lambda: h.cloud.of("service")[0].fields["description"] == "mine", "repaired now")
    passes, updates = (await h.state(wf)).passes, h.cloud.count(io.UPDATE.name)
    await h.signal(wf, 2, spec, annotations={RECONCILE_REQUESTED: "1700000000"})  # the same value: handled
    await eventually(lambda: h.cloud.statuses[-1]["observedGeneration"] == 2, "generation 2 observed")
    assert (await h.state(wf)).passes == passes + 1 and h.cloud.count(io.UPDATE.name) == updates


async def test_resync_period_sets_how_often_the_sweep_checks_the_objects(h: Harness) -> None:
    await h.apply("Domain", {"name": "slow"}, name="slow")
    await eventually(lambda: _n(h, 1), "the slow domain reported")
    await h.sleep_settled(121)
    assert h.cloud.count(sw.SCAN.name) == 0  # the default (600 s) is not due
    await h.apply("Domain", {"name": "fast", "resyncPeriod": "2m"}, name="fast")
    await eventually(lambda: _n(h, 2), "the fast domain reported")
    await h.sleep_settled(121)
    await eventually(lambda: h.cloud.count(sw.SCAN.name) >= 1, "the 2m scan ran")


async def _n(h: Harness, n: int) -> bool:
    return await h.swept() == n
