"""A late answer from an object's workflow is waited for, not claimed again (workflows/keystone/common.py).

At 2,000 resources the objects' workflows fell minutes behind; every resource re-claimed each minute, and
each re-claim cost its object one more step, Keystone read and answer, which put them further behind (the
P3 run at 2,000 in docs/benchmarks.md). A claim the server accepted is in the object's inbox: the retry
waits for its answer, and only after LATE_CLAIM_RESEND sends it again (for an object's workflow someone
terminated, which the claim starts again). No retry paces that wait: the answer's arrival wakes the
resource and is its pass's answer (a retry a minute, each a timer, a wait and three workflow tasks, and a
second claim once the answer came, were most of a Project's 46.8 history events at 2,000).
"""

from __future__ import annotations

from temporalio.worker import Worker

from osprov.api import ownership as own
from osprov.api.ownership import ObjectKey, ObjectResult
from osprov.workflows.all import WORKFLOWS
from osprov.workflows.keystone.common import ANSWER_TIMEOUT, LATE_CLAIM_RESEND
from tests.workflows.harness import Harness, eventually


async def test_a_late_answer_wakes_the_resource_and_answers_its_pass_with_no_retry_between(
    h: Harness,
) -> None:
    h.cloud.hold_claims = 1  # the object's workflow is minutes behind: the claim reaches it late
    wf = await h.apply("Domain", {"name": "d"})
    await eventually(lambda: len(h.cloud.held) == 1, "the first claim")

    answer_s = int(ANSWER_TIMEOUT.total_seconds())
    await h.sleep_settled(answer_s + 1)
    await eventually(lambda: bool(h.cloud.statuses), "the late answer reported")
    assert "still waiting" in h.last_ready()["message"]
    passes = (await h.state(wf)).passes
    for _ in range(3):  # minutes pass; before: a retry a minute, each waiting for the answer again
        await h.sleep_settled(answer_s + 10)
    assert (await h.state(wf)).passes == passes

    await h.deliver_held()
    await h.until(lambda: h.last_ready()["status"] == "True", "Ready from the late answer")
    assert len(h.cloud.claims) == 1, [c.seq for c in h.cloud.claims]  # before: claimed again once it came
    assert len(h.cloud.of("domain")) == 1


async def test_a_late_answer_is_waited_for_and_claimed_again_only_after_the_resend_time(h: Harness) -> None:
    h.cloud.lose_claims = 1  # the object never hears the first claim (as if its workflow were stuck)
    await h.apply("Domain", {"name": "d"})
    await eventually(lambda: len(h.cloud.claims) == 1, "the first claim")

    answer_s = int(ANSWER_TIMEOUT.total_seconds())
    await h.sleep_settled(answer_s + 1)
    await eventually(lambda: bool(h.cloud.statuses), "the late answer reported")
    assert "no answer yet" in h.last_ready()["message"] and "still waiting" in h.last_ready()["message"]
    for _ in range(3):  # retries, each waiting for the same claim's answer again
        await h.sleep_settled(answer_s + 10)
    assert len(h.cloud.claims) == 1, [c.seq for c in h.cloud.claims]  # before: a claim per retry
    assert not h.cloud.of("domain")

    await h.sleep_settled(int(LATE_CLAIM_RESEND.total_seconds()))
    await h.until(lambda: h.last_ready()["status"] == "True", "created after the claim went out again")
    assert len(h.cloud.claims) == 2 and h.cloud.claims[1].seq == 2
    assert len(h.cloud.of("domain")) == 1


async def test_a_changed_spec_is_claimed_at_once_though_an_answer_is_late(h: Harness) -> None:
    """Only the very claims whose answer is late wait; a new declaration goes out as before."""
    h.cloud.lose_claims = 1
    wf = await h.apply("Domain", {"name": "d"})
    await eventually(lambda: len(h.cloud.claims) == 1, "the first claim")
    await h.sleep_settled(int(ANSWER_TIMEOUT.total_seconds()) + 1)
    await eventually(lambda: bool(h.cloud.statuses), "the late answer reported")

    await h.signal(wf, 2, {"name": "d", "description": "changed"})
    await eventually(lambda: len(h.cloud.claims) == 2, "the changed declaration claimed")
    await eventually(
        lambda: bool(h.cloud.of("domain")) and h.last_ready()["status"] == "True", "created as declared"
    )
    assert h.cloud.of("domain")[0].fields.get("description") == "changed"


async def test_an_answer_that_arrived_before_the_state_existed_answers_the_pass(h: Harness) -> None:
    """A worker killed in a resource's first workflow task, after its claim went out: the object's answer
    lands in that task's history, before the state exists, and the claim sent again on replay gets no
    second answer (the object already gave it). That answer was dropped, and the pass waited for it until
    the resend, 10 minutes later (CI: test_spine's kill -9 test)."""
    queue = f"{h.queue}-later"  # no worker yet: the answer arrives with the start, in one first task
    handle = await h.apply("Domain", {"name": "early"}, name="early", queue=queue)
    dom = h.cloud.add("domain", name="early", enabled=True)
    answer = ObjectResult(
        key=ObjectKey(kind="domain", name="early"),
        seq=1,
        outcome="adopted",
        message="found domain early",
        id=dom.id,
        origin="found",
    )
    await handle.signal(own.SIGNAL_OBJECT_RESULT, answer)
    h.cloud.lose_claims = 1  # the claim sent again reaches an object that already answered it
    async with Worker(h.env.client, task_queue=queue, workflows=WORKFLOWS, activities=h.cloud.activities()):
        await eventually(lambda: bool(h.cloud.statuses), "the first status")
        assert h.last_ready()["status"] == "True", h.last_ready()
        assert len(h.cloud.claims) == 1
