"""The Server workflow on the time-skipping server with a stubbed Nova, named by the rebuild step labels."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
import pytest_asyncio
from temporalio.client import WorkflowHandle
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from osprov.api import nova_io as io
from osprov.workflows.all import WORKFLOWS
from tests.workflows.fakes import FakeCloud
from tests.workflows.fakes_nova import FakeNova
from tests.workflows.harness import CONFIG, Harness, skip
from tests.workflows.history import current_run, scheduled_activities

OLD, NEW, NEWER = "img-old", "img-new", "img-newer"


def spec(image: str = OLD, **extra: Any) -> dict[str, Any]:
    return {
        "project": {"name": "p", "domain": "Default"},
        "flavor": "m1.tiny",
        "imageID": image,
        "deletionPolicy": "delete",
        **extra,
    }


class ServerHarness(Harness):
    nova: FakeNova

    async def until_step(self, wf: WorkflowHandle[Any, Any], prefix: str) -> None:
        """The workflow's query shows the step (it may be mid-pass at the first look)."""
        end = time.monotonic() + 30
        while not (await self.state(wf)).step.startswith(prefix):
            if time.monotonic() > end:
                raise AssertionError(f"step is {(await self.state(wf)).step!r}, not {prefix!r}")
            await asyncio.sleep(0.05)

    def status(self) -> dict[str, Any]:
        return self.cloud.statuses[-1] if self.cloud.statuses else {}

    def condition(self, ctype: str = "Available") -> dict[str, Any]:
        return next((c for c in self.status().get("conditions", []) if c["type"] == ctype), {})


@pytest_asyncio.fixture
async def h(tenv: WorkflowEnvironment) -> AsyncIterator[ServerHarness]:
    cloud, nova = FakeCloud(), FakeNova()
    queue = f"q-{uuid.uuid4()}"
    async with Worker(
        tenv.client, task_queue=queue, workflows=WORKFLOWS, activities=cloud.activities() + nova.activities()
    ):
        hs = ServerHarness(tenv, cloud, queue)
        hs.nova = nova
        yield hs
        await hs.close()


async def polls(h: ServerHarness, n: int) -> None:
    """Let the monitor read the server n more times."""
    target = h.nova.count(io.GET_SERVER.name) + n
    await h.until(lambda: h.nova.count(io.GET_SERVER.name) >= target, f"{n} more monitor polls")


async def ready(h: ServerHarness, image: str = OLD) -> WorkflowHandle[Any, Any]:
    wf = await h.apply("Server", spec(image))
    await h.until(lambda: h.condition().get("status") == "True", "server available")
    return wf


async def test_create_names_the_server_by_uid_with_system_metadata_last(h: ServerHarness) -> None:
    wf = await h.apply("Server", spec(tags={"osprov.uid": "forged", "team": "a"}), uid="u-1")
    await h.until(lambda: h.condition().get("status") == "True", "server available")
    server = h.nova.only()
    assert server.name == "server-u-1"
    assert server.metadata["osprov.uid"] == "u-1" and server.metadata["osprov.tag.team"] == "a"
    assert list(server.metadata)[-5:] == list(io.SYSTEM_KEYS)
    st = h.status()
    assert (
        st["serverID"] == server.id
        and st["phase"] == "Running"
        and st["launchedAt"] == "2026-01-01T00:00:00Z"
    )
    assert h.condition("Healthy")["reason"] == "Healthy"
    assert st.get("rebuild") is None and ((await h.state(wf)).kind or {})["rebuild"] is None


async def test_each_wait_keeps_the_cadence_of_the_task_that_saw_nova_busy(h: ServerHarness) -> None:
    """The rebuild was accepted (the fake boots at once, so only the rebuild is waited on): the wait carries
    the start of the workflow task that decided to wait, so its second read comes one interval after it
    (activities/cloud.py, poll) and the workflow's own round trip to the wait is not added to its reads."""
    wf = await ready(h)
    await h.signal(wf, 2, spec(NEW))
    await h.until(lambda: h.nova.submits == [NEW], "rebuild submitted")
    h.nova.only().settle()
    await h.until(lambda: h.condition().get("status") == "True", "settled")
    waits = await scheduled_activities(h.env.client, wf.id, io.AWAIT_SERVER.name, io.AwaitServer)
    [wait] = waits
    assert wait.within_its_task(wait.input.busy_seen_at)


async def test_existing_server_of_the_exact_name_is_adopted(h: ServerHarness) -> None:
    """E.g. the workflow was terminated and started again: the create-if-absent finds the server."""
    ours = h.nova.add("server-u-2", OLD)
    h.nova.add("server-u-2x", OLD)  # a prefix match is not ours
    await h.apply("Server", spec(), uid="u-2")
    await h.until(lambda: h.condition().get("status") == "True", "adopted")
    assert len(h.nova.servers) == 2 and h.status()["serverID"] == ours.id


async def test_a_new_server_is_created_without_a_lookup_of_its_own(h: ServerHarness) -> None:
    """nova.create_server looks the exact name up itself; before, the pass ran a find_server activity first."""
    await ready(h)
    assert h.nova.count(io.FIND_SERVER.name) == 0
    assert h.nova.count(io.CREATE_SERVER.name) == 1 and len(h.nova.servers) == 1


async def test_P7b_P7e_P6b_P6a_rebuild_arms_then_submits_once_and_settles(h: ServerHarness) -> None:
    wf = await ready(h)
    server = h.nova.only()
    await h.signal(wf, 2, spec(NEW))
    await h.until(lambda: h.nova.submits == [NEW], "rebuild submitted")
    # The arm came first: the status mirror showed Initiated before the submit (made in the same pass,
    # after the arming workflow task completed: rebuild.md, "Where the marker lives").
    mirrored = [s["rebuild"]["state"] for s in h.cloud.statuses if s.get("rebuild")]
    assert mirrored[0] == "Initiated"
    await h.until(lambda: (h.status().get("rebuild") or {}).get("state") == "Rebuilding", "accepted")
    assert h.status()["phase"] == "Building" and h.condition("Healthy")["reason"] == "Provisioning"
    server.settle()
    await h.until(lambda: h.condition().get("status") == "True", "settled")
    assert h.status()["rebuild"] is None and h.status()["serverID"] == server.id
    assert h.nova.accepted == [NEW] and h.nova.count(io.CREATE_SERVER.name) == 1


async def test_P6a_a_settled_wait_decides_the_next_pass_from_its_last_read(h: ServerHarness) -> None:
    """The wait found Nova done: that read is the next pass's fresh read, so no GET and no timer follow."""
    wf = await ready(h)
    h.nova.settle_in_wait = True
    gets = h.nova.count(io.GET_SERVER.name)
    await h.signal(wf, 2, spec(NEW))
    await h.until(
        lambda: h.status().get("observedGeneration") == 2 and h.condition().get("status") == "True", "settled"
    )
    assert h.nova.accepted == [NEW] and h.status()["rebuild"] is None
    assert h.nova.count(io.GET_SERVER.name) == gets + 1  # the arming pass's read only
    assert h.nova.count(io.AWAIT_SERVER.name) == 1


async def test_P7a_image_change_before_first_boot_waits_then_rebuilds(h: ServerHarness) -> None:
    h.nova.boot_on_create = False
    wf = await h.apply("Server", spec())
    await h.until(lambda: h.nova.count(io.CREATE_SERVER.name) == 1, "created")
    await h.signal(wf, 2, spec(NEW))
    await h.until(lambda: h.nova.count(io.GET_SERVER.name) >= 1, "re-read")
    await h.until_step(wf, "P7a: waiting for first boot")
    await polls(h, 2)  # still waiting after more re-checks
    assert h.nova.submits == []
    h.nova.only().boot()
    await h.until(lambda: h.nova.accepted == [NEW], "rebuilt after boot", virtual_s=60)


async def test_P7e_409_waits_silently_then_submits_once_more(h: ServerHarness) -> None:
    wf = await ready(h)
    h.nova.submit_outcomes = ["conflict"]
    await h.signal(wf, 2, spec(NEW))
    await h.until(lambda: len(h.nova.submits) == 2, "resubmitted after the 409")
    assert h.nova.accepted == [NEW]
    assert (h.status().get("rebuild") or {}).get("state") != "Failed"


async def test_P7e_unknown_outcome_after_accept_is_resolved_by_a_read_not_a_resend(h: ServerHarness) -> None:
    wf = await ready(h)
    h.nova.submit_outcomes = ["lost_accepted"]
    await h.signal(wf, 2, spec(NEW))
    await h.until(lambda: (h.status().get("rebuild") or {}).get("state") == "Rebuilding", "P6b accepted")
    h.nova.only().settle()
    await h.until(lambda: h.condition().get("status") == "True" and h.status()["rebuild"] is None, "settled")
    assert h.nova.submits == [NEW]


async def test_P7e_unknown_outcome_never_accepted_submits_again(h: ServerHarness) -> None:
    wf = await ready(h)
    h.nova.submit_outcomes = ["lost"]
    await h.signal(wf, 2, spec(NEW))
    await h.until(lambda: h.nova.accepted == [NEW], "accepted on the second submit")
    assert h.nova.submits == [NEW, NEW]


async def test_P7d_foreign_task_holds_the_submit(h: ServerHarness) -> None:
    wf = await ready(h)
    server = h.nova.only()
    server.task_state = "rebooting"
    await h.signal(wf, 2, spec(NEW))
    await h.until(lambda: h.nova.count(io.GET_SERVER.name) >= 4, "waited")
    await h.until_step(wf, "P7d")
    assert h.nova.submits == []
    server.task_state = None
    await h.until(lambda: h.nova.accepted == [NEW], "submitted once the task ended")


async def test_P4b_P4a_error_during_rebuild_parks_and_a_new_image_P3_rearms(h: ServerHarness) -> None:
    wf = await ready(h)
    server = h.nova.only()
    await h.signal(wf, 2, spec(NEW))
    await h.until(lambda: h.nova.accepted == [NEW], "accepted")
    server.status, server.task_state = "ERROR", None
    await h.until(lambda: h.condition().get("reason") == "Errored", "parked")
    assert h.status()["rebuild"] == {"targetImageID": NEW, "state": "Failed"}
    assert h.condition("Healthy")["reason"] == "Errored"
    await polls(h, 2)  # parked: the monitor still polls, nothing is submitted
    assert h.nova.submits == [NEW]
    await h.until_step(wf, "P4a: parked")
    await h.signal(wf, 3, spec(NEWER))
    await h.until(lambda: h.nova.accepted == [NEW, NEWER], "re-armed and resubmitted")
    server.settle()
    await h.until(lambda: h.condition().get("status") == "True", "settled")


async def test_server_that_errors_before_first_boot_is_recreated_a_bounded_number_of_times(
    h: ServerHarness,
) -> None:
    h.nova.boot_on_create = False
    await h.apply("Server", spec())

    def fail_unbooted() -> bool:
        for s in h.nova.servers.values():
            s.status, s.task_state = "ERROR", None
        return h.condition().get("reason") == "Errored"

    await h.until(fail_unbooted, "gave up after the bounded recreates")
    # Three servers in all; the last failed one is left in place for diagnosis.
    assert h.nova.count(io.CREATE_SERVER.name) == 3 and h.nova.count(io.DELETE_SERVER.name) == 2


async def test_a_booted_server_in_error_is_never_recreated(h: ServerHarness) -> None:
    await ready(h)
    h.nova.only().status = "ERROR"
    await h.until(lambda: h.condition("Healthy").get("reason") == "Errored", "health mapped")
    await polls(h, 2)
    assert h.nova.count(io.DELETE_SERVER.name) == 0 and h.nova.count(io.CREATE_SERVER.name) == 1


async def test_delete_waits_until_the_server_is_gone(h: ServerHarness) -> None:
    wf = await ready(h)
    h.nova.vanish_on_delete = False
    await h.signal(wf, 2, spec(), deleting=True, finalizers=["nova.osh.openstack.org/finalizer"])
    await h.until(lambda: h.nova.count(io.DELETE_SERVER.name) == 1, "delete sent")
    await h.until(lambda: h.nova.count(io.FIND_SERVER.name) >= 8, "re-read by name, one read per pass")
    assert h.nova.count(io.DELETE_SERVER.name) == 1  # sent once, never resent while Nova works on it
    assert h.cloud.finalizers.count("nova.osh.openstack.org/finalizer") == 1  # still held
    assert h.status()["phase"] == "Deleting"
    assert (h.condition()["status"], h.condition()["reason"]) == ("False", "Deprovisioning")
    h.nova.servers.clear()
    assert await wf.result() == "deleted"


async def test_stuck_delete_keeps_every_run_short_and_ends_when_nova_does(h: ServerHarness) -> None:
    """Nova never finishes the delete: re-read one pass at a time; continue-as-new bounds each run."""
    passes = 10
    wf = await h.apply("Server", spec(), config=CONFIG.model_copy(update={"max_passes_per_run": passes}))
    await h.until(lambda: h.condition().get("status") == "True", "server available")
    h.nova.vanish_on_delete = False
    first = await current_run(h.env.client, wf.id)
    await h.signal(wf, 2, spec(), deleting=True, finalizers=["nova.osh.openstack.org/finalizer"])
    await skip(h.env, 30 * 60)
    run = await current_run(h.env.client, wf.id)
    assert run.run_id != first.run_id  # the delete went on across runs
    assert len(run.events) < passes * 15, len(run.events)  # a pass is about ten events
    assert h.nova.count(io.DELETE_SERVER.name) == 1 and h.status()["phase"] == "Deleting"
    h.nova.servers.clear()
    assert await wf.result() == "deleted"


async def test_volumes_attach_report_device_and_detach_when_removed(h: ServerHarness) -> None:
    h.nova.volumes = {"data": (None, None), "taken": ("srv-other", "/dev/vdb")}
    vols = [{"volume": "data", "device": "/dev/vdc"}, {"volume": "taken"}]
    wf = await h.apply("Server", spec(volumes=vols))
    await h.until(lambda: len(h.status().get("volumes") or []) == 2, "attachment status")
    by_name = {v["name"]: v for v in h.status()["volumes"]}
    assert by_name["data"] == {"name": "data", "device": "/dev/vdc"}
    assert "no multi-attach" in by_name["taken"]["message"]
    assert h.condition()["status"] == "False" and h.nova.volumes["taken"][0] == "srv-other"
    await h.signal(wf, 2, spec())  # both removed from the spec
    await h.until(lambda: h.condition().get("status") == "True", "available without volumes")
    assert h.nova.volumes["data"] == (None, None) and h.status()["volumes"] == []


# --- observe only (managementPolicy unmanaged + import): rows O1…O4, OS1…OS3 (workflows/observe_import.py) ---
WRITES = (io.CREATE_SERVER.name, io.SET_METADATA.name, io.REBUILD.name, io.DELETE_SERVER.name)


def imported(chosen: dict[str, Any]) -> dict[str, Any]:
    return spec(NEW, managementPolicy="unmanaged", deletionPolicy="retain", **{"import": chosen})


@pytest.mark.parametrize("by", ["id", "filter"])
async def test_O1_OS1_an_imported_server_is_mirrored_never_changed_and_outlives_its_resource(
    h: ServerHarness, by: str
) -> None:
    """The status mirrors a server osprov did not create, whatever its image, metadata or name: no
    metadata write, no rebuild to spec.imageID, no delete; deleting the resource leaves it as it was."""
    theirs = h.nova.add("legacy-web", OLD)
    theirs.metadata = {"owner": "another tool"}
    wf = await h.apply(
        "Server", imported({"id": theirs.id} if by == "id" else {"filter": {"name": "legacy-web"}})
    )
    await h.until(lambda: h.condition().get("status") == "True", "the imported server observed")
    assert h.condition()["reason"] == "Provisioned" and theirs.id in h.condition()["message"]
    assert h.status()["serverID"] == theirs.id and h.status()["phase"] == "Running"
    assert h.condition("Healthy")["status"] == "True" and h.status()["launchedAt"]
    theirs.status = "ERROR"  # OS2, seen by the monitor's next read
    await h.until(lambda: h.condition().get("reason") == "Errored", "the observed ERROR")
    assert h.condition("Healthy")["status"] == "False"
    theirs.status = "SHUTOFF"  # OS1 again: stopped on purpose is still there
    await h.until(lambda: h.condition().get("status") == "True", "observed SHUTOFF")
    assert h.status()["phase"] == "Stopped"
    await h.signal(wf, 1, imported({"id": theirs.id}), deleting=True)
    assert await wf.result() == "deleted"
    assert h.nova.servers[theirs.id] is theirs and theirs.image_id == OLD
    assert theirs.metadata == {"owner": "another tool"}
    assert [c for c in h.nova.calls if c in WRITES] == []


async def test_OS3_a_server_changing_under_someone_else_is_read_again_soon(h: ServerHarness) -> None:
    theirs = h.nova.add("legacy-web", OLD, booted=False)  # BUILD
    await h.apply("Server", imported({"id": theirs.id}))
    await h.until(lambda: h.condition().get("reason") == "Provisioning", "observed BUILD")
    assert h.status()["phase"] == "Building"
    theirs.boot()
    await h.until(lambda: h.condition().get("status") == "True", "observed ACTIVE", virtual_s=15)


async def test_O3_an_import_that_matches_nothing_or_another_projects_server_creates_nothing(
    h: ServerHarness,
) -> None:
    foreign = h.nova.add("theirs", OLD)
    foreign.foreign = True  # readable by ID with an admin token, but not in this project
    for name, chosen in (("missing", {"id": "srv-404"}), ("foreign", {"id": foreign.id})):
        await h.apply("Server", imported(chosen), name=name)
        shown = f"no Nova server with ID {chosen['id']}"
        await h.until(_says(h, shown), f"{name}: nothing to observe")
    assert h.condition()["reason"] == "Errored" and f"ID {foreign.id}" in h.condition()["message"]
    assert [c for c in h.nova.calls if c in WRITES] == [] and list(h.nova.servers) == [foreign.id]


def _says(h: ServerHarness, text: str) -> Callable[[], bool]:
    return lambda: text in h.condition().get("message", "")


async def test_O4_two_servers_with_the_imported_name_are_refused(h: ServerHarness) -> None:
    h.nova.add("twin", OLD)
    h.nova.add("twin", OLD)
    await h.apply("Server", imported({"filter": {"name": "twin"}}))
    await h.until(lambda: h.condition().get("reason") == "Errored", "the ambiguity reported")
    assert "2 Nova servers are named twin" in h.condition()["message"] and "by ID" in h.condition()["message"]
    assert [c for c in h.nova.calls if c in WRITES] == []
