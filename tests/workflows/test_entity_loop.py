"""The entity loop, on the time-skipping server with stubbed activities (real workflow code)."""

from __future__ import annotations

from typing import Any

from temporalio.client import WorkflowHandle

from osprov.api import keystone_io as io
from osprov.api.messages import (
    ResourceChange,
)
from tests.workflows.harness import CONFIG, Harness, eventually


async def test_create_then_skip_unchanged_generation(h: Harness) -> None:
    wf = await h.apply("Domain", {"name": "service", "description": "d"})
    await eventually(lambda: bool(h.cloud.statuses), "status written")
    assert [o.fields["name"] for o in h.cloud.of("domain")] == ["service"]
    ready = h.last_ready()
    assert (ready["status"], ready["reason"]) == ("True", "Reconciled")
    assert h.cloud.statuses[-1]["domainID"] == h.cloud.of("domain")[0].id
    assert h.cloud.statuses[-1]["observedGeneration"] == 1
    finds = h.cloud.count(io.FIND.name)
    # The same generation again (a bridge relist) changes nothing: no lookup, no write. Generation 2
    # follows it, so once 2 is observed, the duplicate was processed before it.
    ref = (await h.state(wf)).ref
    spec = {"name": "service", "description": "d"}
    await h.send(wf, ResourceChange(ref=ref, generation=1, spec=spec))
    await h.send(wf, ResourceChange(ref=ref, generation=2, spec=spec))
    await eventually(lambda: h.cloud.statuses[-1]["observedGeneration"] == 2, "generation 2 observed")
    assert h.cloud.count(io.FIND.name) == finds + 1
    assert (await h.state(wf)).passes == 2


async def _passes(h: Harness, wf: WorkflowHandle[Any, Any], n: int) -> bool:
    return (await h.state(wf)).passes >= n


async def test_new_generation_patches_drift_and_keeps_id(h: Harness) -> None:
    wf = await h.apply("Domain", {"name": "service", "description": "old"})
    await eventually(lambda: bool(h.cloud.statuses), "created")
    first_id = h.cloud.of("domain")[0].id
    ref = (await h.state(wf)).ref
    await h.send(
        wf,
        ResourceChange(ref=ref, generation=2, spec={"name": "service", "description": "new"}),
    )
    await eventually(lambda: h.cloud.statuses[-1]["observedGeneration"] == 2, "generation 2 observed")
    [dom] = h.cloud.of("domain")
    assert (dom.id, dom.fields["description"]) == (first_id, "new")
    assert h.cloud.count(io.UPDATE.name) == 1
    assert "updated domain service" in h.last_ready()["message"]


async def test_missing_domain_is_reported_then_a_domain_resource_wakes_the_project(h: Harness) -> None:
    """A dependency declared later wakes its dependent through the objects' workflows: no retry timer."""
    wf = await h.apply("Project", {"name": "service", "domain": "service"})
    await eventually(lambda: bool(h.cloud.statuses), "failure reported")
    ready = h.last_ready()
    assert (ready["status"], ready["reason"]) == ("False", "ReconcileError")
    assert "domain 'service' does not exist in Keystone yet" in ready["message"]
    assert h.cloud.of("project") == []
    assert (await h.state(wf)).retry_at is None  # nothing polls: the domain's workflow will say so
    await h.apply("Domain", {"name": "service"}, name="dom")
    await eventually(lambda: h.last_ready()["status"] == "True" and bool(h.cloud.of("project")), "woken")
    [proj] = h.cloud.of("project")
    assert proj.fields["domain_id"] == h.cloud.of("domain")[0].id


async def test_domain_created_outside_osprov_is_found_by_the_slow_recheck(h: Harness) -> None:
    await h.apply("Project", {"name": "service", "domain": "service"})
    await eventually(lambda: bool(h.cloud.statuses), "failure reported")
    h.cloud.add("domain", name="service", enabled=True)  # by hand: no workflow hears of it
    await h.until(lambda: bool(h.cloud.of("project")), "project created after the re-check", virtual_s=60)
    assert h.last_ready()["status"] == "True"


async def test_retry_interval_from_spec_sets_the_retry_timer(h: Harness) -> None:
    h.cloud.fail_next[io.FIND.name] = "Conflict"  # an error (not a missing dependency) is retried
    wf = await h.apply("Domain", {"name": "d", "retryInterval": "2m"})
    await eventually(lambda: bool(h.cloud.statuses), "failure reported")
    st = await h.state(wf)
    assert st.retry_at is not None
    finds = h.cloud.count(io.FIND.name)
    await h.env.sleep(60)
    assert h.cloud.count(io.FIND.name) == finds  # not before retryInterval
    await h.env.sleep(61)
    await eventually(lambda: h.cloud.count(io.FIND.name) > finds, "retried after 2m")


async def test_resync_repairs_drift_made_outside(h: Harness) -> None:
    await h.apply("Service", {"name": "cinderv3", "type": "volumev3", "description": "mine"})
    await eventually(lambda: bool(h.cloud.statuses), "created")
    [svc] = h.cloud.of("service")
    h.cloud.objects["service"][svc.id] = svc.model_copy(
        update={"fields": svc.fields | {"description": "hand"}}
    )
    await h.sleep_settled(601)  # the periodic forced resync
    await eventually(lambda: h.cloud.of("service")[0].fields["description"] == "mine", "drift repaired")
    assert h.cloud.of("service")[0].id == svc.id


async def test_continue_as_new_carries_state(h: Harness) -> None:
    config = CONFIG.model_copy(update={"max_passes_per_run": 2})
    wf = await h.apply("Domain", {"name": "d"}, config=config)
    await eventually(lambda: bool(h.cloud.statuses), "created")
    first_run = (await h.env.client.get_workflow_handle(wf.id).describe()).run_id
    await h.signal(wf, 2, {"name": "d", "description": "v2"})  # the second pass: then continue-as-new
    await eventually(lambda: _new_run(h, wf, first_run), "continued as new")
    st = await h.state(wf)
    assert st.kind is not None and st.kind["id"] == h.cloud.of("domain")[0].id
    assert st.applied_fingerprint is not None and st.written_status == h.cloud.statuses[-1]
    statuses = len(h.cloud.statuses)
    await h.signal(wf, 3, {"name": "d", "description": "v3"})
    await eventually(
        lambda: h.cloud.of("domain")[0].fields.get("description") == "v3", "the new run converges"
    )
    assert len(h.cloud.of("domain")) == 1  # the carried ID: no second create
    await eventually(lambda: h.cloud.statuses[-1]["observedGeneration"] == 3, "generation 3 reported")
    assert len(h.cloud.statuses) == statuses + 1  # carried status: only the new generation is written


async def _new_run(h: Harness, wf: WorkflowHandle[Any, Any], first: str | None) -> bool:
    return (await h.env.client.get_workflow_handle(wf.id).describe()).run_id != first


async def test_delete_policy_adds_finalizer_first_and_deletes_by_stored_id(h: Harness) -> None:
    spec = {"name": "svc", "type": "t", "deletionPolicy": "delete"}
    wf = await h.apply("Service", spec)
    await eventually(lambda: bool(h.cloud.statuses), "created")
    assert h.cloud.calls.index("kube.add_finalizer") < h.cloud.calls.index(io.CREATE.name)
    [svc] = h.cloud.of("service")
    other = h.cloud.add("service", name="svc", type="t")  # same name, not ours: must survive
    ref = (await h.state(wf)).ref
    await h.send(
        wf,
        ResourceChange(
            ref=ref,
            generation=1,
            spec=spec,
            deleting=True,
            finalizers=["keystone.osh.openstack.org/finalizer"],
        ),
    )
    assert await wf.result() == "deleted"
    assert [o.id for o in h.cloud.of("service")] == [other.id]
    assert svc.id not in h.cloud.objects["service"]
    assert h.cloud.finalizers == []


async def test_retain_deletion_touches_nothing(h: Harness) -> None:
    wf = await h.apply("Domain", {"name": "keep"})
    await eventually(lambda: bool(h.cloud.statuses), "created")
    ref = (await h.state(wf)).ref
    await h.send(wf, ResourceChange(ref=ref, generation=1, spec={"name": "keep"}, gone=True))
    assert await wf.result() == "deleted"
    assert h.cloud.count(io.DELETE.name) == 0 and len(h.cloud.of("domain")) == 1


async def test_foreign_keystone_ref_is_ignored_except_our_finalizer(h: Harness) -> None:
    wf = await h.apply(
        "Domain",
        {"name": "x", "keystoneRef": {"name": "other"}},
        finalizers=["keystone.osh.openstack.org/finalizer"],
    )
    h.cloud.finalizers.append("keystone.osh.openstack.org/finalizer")
    assert await wf.result() == "ignored: belongs to another deployment"
    assert h.cloud.statuses == [] and h.cloud.count(io.FIND.name) == 0
    assert h.cloud.finalizers == []


async def test_invalid_spec_is_reported_without_cloud_calls(h: Harness) -> None:
    wf = await h.apply("Domain", {"description": "no name", "retryInterval": "soon"})
    await eventually(lambda: bool(h.cloud.statuses), "reported")
    ready = h.last_ready()
    assert ready["status"] == "False" and "spec.name" in ready["message"]
    assert h.cloud.count(io.FIND.name) == 0
    assert (await h.state(wf)).retry_at is None  # nothing to retry until the resource changes


async def test_transient_failure_retries_with_backoff(h: Harness) -> None:
    h.cloud.fail_next[io.FIND.name] = "Conflict"  # not retried by the activity policy: back to the loop
    await h.apply("Role", {"name": "member"})
    await eventually(lambda: bool(h.cloud.statuses), "failure reported")
    assert "injected Conflict" in h.last_ready()["message"]
    await h.sleep_settled(6)
    await eventually(lambda: h.last_ready()["status"] == "True", "recovered on the retry timer")
    assert len(h.cloud.of("role")) == 1


async def test_overdue_resync_does_not_spin_while_failing(h: Harness) -> None:
    config = CONFIG.model_copy(update={"resync_seconds": 60, "backoff_max_seconds": 30})
    wf = await h.apply("Domain", {"name": "d"}, config=config)
    await eventually(lambda: bool(h.cloud.statuses), "created")
    h.cloud.fail_next[io.FIND.name] = "Conflict"
    h.cloud.objects.clear()
    # The resync runs into the injected failure, then keeps failing on Keystone's side.
    await h.sleep_settled(61)
    await eventually(lambda: h.last_ready()["status"] == "False", "failure reported")
    passes = (await h.state(wf)).passes
    await h.env.sleep(300)
    # Paced by the retry timer (backoff capped at 30 s) and one resync a minute: about 10 + 5 passes.
    assert (await h.state(wf)).passes - passes <= 20


async def test_a_refused_finalizer_is_reported_and_retried_not_a_failed_workflow(h: Harness) -> None:
    h.cloud.fail_next["kube.add_finalizer"] = "Invalid"
    wf = await h.apply("Domain", {"name": "d", "deletionPolicy": "delete"})
    await eventually(lambda: bool(h.cloud.statuses), "the refusal reported")
    assert h.last_ready()["status"] == "False" and "injected Invalid" in h.last_ready()["message"]
    await h.sleep_settled(6)  # past the first backoff
    await eventually(lambda: h.last_ready()["status"] == "True", "retried and converged")
    assert (await wf.describe()).status is not None and h.cloud.finalizers
