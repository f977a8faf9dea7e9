"""Answers that come again on their own answer the pass they wake (`keystone-answered-again`,
workflows/keystone/common.py `_claim`).

A resource whose object answered "waiting" (its dependency does not exist yet) failed its pass, so its
desired state stayed unapplied. When the dependency appeared, the object made its object and answered the
same claim again; the pass that answer woke counted as a change and claimed everything again, and each
object read itself once more to answer. In a Cinder example run (P1) whose endpoints' objects looked for
their service before it existed, the Endpoint, the last resource Ready, waited ~0.2 s for that second
round (docs/benchmarks.md).
"""

from __future__ import annotations

from tests.workflows.harness import Harness, eventually

ENDPOINT = {
    "service": {"name": "cinderv3", "type": "volumev3"},
    "region": "RegionOne",
    "urls": {"internal": "http://cinder:8776/v3", "public": "http://cinder.example/v3"},
}


def _claims(h: Harness, kind: str) -> list[tuple[str, int]]:
    return [(c.key.path, c.seq) for c in h.cloud.claims if c.key.kind == kind]


async def test_an_endpoint_waiting_for_its_service_is_ready_from_the_answers_that_follow(h: Harness) -> None:
    wf = await h.apply("Endpoint", ENDPOINT, name="ep")
    await eventually(lambda: h.ready_of(wf).get("status") == "False", "the Endpoint waiting for its service")
    assert "does not exist" in h.ready_of(wf)["message"], h.ready_of(wf)
    assert not h.cloud.of("endpoint")

    await h.apply("Service", {"name": "cinderv3", "type": "volumev3"}, name="svc")
    await eventually(lambda: h.ready_of(wf).get("status") == "True", "the Endpoint Ready")
    assert {e.fields["interface"] for e in h.cloud.of("endpoint")} == {"internal", "public"}
    claims = _claims(h, "endpoint")
    assert sorted(seq for _, seq in claims) == [1, 1], claims  # before: [1, 1, 2, 2], a second round


async def test_a_project_waiting_for_its_domain_is_ready_from_the_answer_that_follows(h: Harness) -> None:
    wf = await h.apply("Project", {"name": "p1", "domain": "service"}, name="p1")
    await eventually(lambda: h.ready_of(wf).get("status") == "False", "the Project waiting for its domain")
    await h.apply("Domain", {"name": "service"}, name="dom")
    await eventually(lambda: bool(h.written.get(wf.id, {}).get("projectID")), "the Project Ready")
    assert h.ready_of(wf)["status"] == "True"
    [dom] = h.cloud.of("domain")
    assert [p.fields["domain_id"] for p in h.cloud.of("project")] == [dom.id]
    assert _claims(h, "project") == [("project/service/p1", 1)]  # before: claimed again, seq 2


async def test_a_spec_changed_while_waiting_is_claimed_again(h: Harness) -> None:
    """The answers stand for the claims they answer only: a new desired state is claimed as before."""
    wf = await h.apply("Project", {"name": "p1", "domain": "service"}, name="p1")
    await eventually(lambda: h.ready_of(wf).get("status") == "False", "the Project waiting for its domain")
    await h.signal(wf, 2, {"name": "p1", "domain": "service", "description": "changed"})
    await eventually(lambda: len(_claims(h, "project")) == 2, "the changed spec claimed")
    await h.apply("Domain", {"name": "service"}, name="dom")
    await eventually(lambda: bool(h.written.get(wf.id, {}).get("projectID")), "the Project Ready")
    [project] = h.cloud.of("project")
    assert project.fields.get("description") == "changed"
    assert [seq for _, seq in _claims(h, "project")] == [1, 2]
