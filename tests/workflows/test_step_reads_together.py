"""A Keystone object's first reads in one round of local activities (patch keystone-step-reads-together).

The policy is read beside the object's own lookup, and so is a new endpoint's region. In turn, each read
was an activation of its own on every new object's way to its create (~50-100 ms apiece on a busy worker,
docs/benchmarks.md P1). The fake's overlap probe (FakeCloud.meet) tells the two
apart: the first read waits for the other to start, which it does only when both were scheduled at once.
"""

from __future__ import annotations

from osprov.api import keystone_io as io
from osprov.api import ownership as own
from osprov.api.ownership import ObjectKey
from tests.workflows.harness import Harness, eventually
from tests.workflows.test_identity_kinds import ENDPOINT
from tests.workflows.test_parent_watch import object_id, ready_project

FIND_REGION, FIND_ENDPOINT = f"{io.FIND.name}:region", f"{io.FIND.name}:endpoint"


def endpoint_ids(h: Harness, *interfaces: str) -> list[str]:
    return [
        object_id(
            h, ObjectKey(kind="endpoint", name="cinderv3", type="volumev3", region="RegionOne", interface=i)
        )
        for i in interfaces
    ]


async def test_a_new_project_reads_the_policy_beside_its_own_lookup(h: Harness) -> None:
    dom = h.cloud.add("domain", name="service", enabled=True)
    project = object_id(h, ObjectKey(kind="project", domain="service", name="p1"))
    h.cloud.meet = {f"{own.POLICY.name} {project}": f"{io.FIND.name}:project {project}"}
    await ready_project(h, "p1")
    assert h.cloud.met == {f"{own.POLICY.name} {project}": True}  # before: False (read in turn)
    [created] = h.cloud.of("project")
    assert created.fields["domain_id"] == dom.id


async def test_a_new_domain_reads_the_policy_beside_its_own_lookup(h: Harness) -> None:
    domain = object_id(h, ObjectKey(kind="domain", name="d1"))
    h.cloud.meet = {f"{own.POLICY.name} {domain}": f"{io.FIND.name}:domain {domain}"}
    await h.apply("Domain", {"name": "d1"})
    await eventually(lambda: bool(h.cloud.statuses), "the domain's status")
    assert h.cloud.met == {f"{own.POLICY.name} {domain}": True}  # before: False (read in turn)
    assert [d.fields["name"] for d in h.cloud.of("domain")] == ["d1"]
    assert h.last_ready()["status"] == "True"


async def test_a_new_endpoint_reads_its_region_beside_its_own_lookup(h: Harness) -> None:
    h.cloud.add("service", name="cinderv3", type="volumev3")
    internal, public = endpoint_ids(h, "internal", "public")
    h.cloud.meet = {f"{FIND_ENDPOINT} {x}": f"{FIND_REGION} {x}" for x in (internal, public)}
    await h.apply("Endpoint", ENDPOINT)
    await eventually(lambda: bool(h.cloud.statuses), "endpoints created")
    assert h.cloud.met == {f"{FIND_ENDPOINT} {x}": True for x in (internal, public)}  # before: False
    # Made for the create (the fake keys regions by its own IDs, so two racing creates both add one; Keystone
    # refuses the second, which the create activity adopts: activities/keystone.py create).
    assert {r.fields["id"] for r in h.cloud.of("region")} == {"RegionOne"}
    assert {e.fields["interface"] for e in h.cloud.of("endpoint")} == {"internal", "public"}
    assert h.last_ready()["status"] == "True"


async def test_an_endpoint_that_exists_is_read_by_id_on_later_steps_without_its_region(h: Harness) -> None:
    h.cloud.add("service", name="cinderv3", type="volumev3")
    wf = await h.apply("Endpoint", ENDPOINT)
    await eventually(lambda: bool(h.cloud.statuses), "endpoints created")
    regions_read = sum(1 for f in h.cloud.finds if f.kind == "region")
    changed = ENDPOINT | {"urls": ENDPOINT["urls"] | {"public": "https://cinder.example/v3"}}
    await h.signal(wf, 2, changed)
    await eventually(lambda: h.cloud.statuses[-1]["observedGeneration"] == 2, "generation 2")
    assert sum(1 for f in h.cloud.finds if f.kind == "region") == regions_read  # present: no region read


async def test_an_unmanaged_endpoint_reads_no_region(h: Harness) -> None:
    h.cloud.add("service", name="cinderv3", type="volumev3")
    await h.apply("Endpoint", ENDPOINT | {"managementPolicy": "unmanaged"})
    await eventually(lambda: bool(h.cloud.statuses), "answered")
    assert h.cloud.of("endpoint") == [] and h.cloud.of("region") == []
    assert [f for f in h.cloud.finds if f.kind == "region"] == []  # it would never create one


async def test_a_failed_policy_read_is_answered_as_an_error_and_retried_without_a_create(h: Harness) -> None:
    h.cloud.fail_next[own.POLICY.name] = "Conflict"  # not retried by the activity policy: back to the loop
    await h.apply("Role", {"name": "member"})
    await eventually(lambda: bool(h.cloud.statuses), "failure reported")
    assert h.last_ready()["status"] == "False" and "injected Conflict" in h.last_ready()["message"]
    assert h.cloud.of("role") == []  # the lookup beside it ran; nothing was written without the policy
    await h.sleep_settled(6)
    await eventually(lambda: h.last_ready()["status"] == "True", "recovered on the retry timer")
    assert len(h.cloud.of("role")) == 1


async def test_a_new_region_is_created_without_a_second_look_after_the_steps_own_read(h: Harness) -> None:
    """The region's create follows this step's read of it: it posts at once (`absent`), Keystone's 409
    adopting a sibling's region (tests/activities/test_keystone_objects.py). Before, it looked again."""
    h.cloud.add("service", name="cinderv3", type="volumev3")
    await h.apply("Endpoint", ENDPOINT)
    await eventually(lambda: bool(h.cloud.statuses), "endpoints created")
    region_creates = [c for c in h.cloud.creates if c.kind == "region"]
    assert region_creates and all(c.absent for c in region_creates)  # before: absent=False
    assert {r.fields["id"] for r in h.cloud.of("region")} == {"RegionOne"}
    assert h.last_ready()["status"] == "True"
