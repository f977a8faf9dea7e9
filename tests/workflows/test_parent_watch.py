"""A dependent's watch (workflows/keystone/parents.py `Parents.missing`, activities/ownership.py `watch`).

A dependent that finds its parent's ID in the parent's memo (a describe) uses it at once, and its watch only
registers it for news: the parent runs no step and signals nothing back. A domain with thousands of
projects wrote a step and a parent-ready signal per project before (docs/benchmarks.md, P3). The parent
compares the ID the watch carries with its own, so a change between the read and the watch is still told.
The memo replaced a query, which a parent busy with hundreds of watches refused ("consistent query buffer
is full"): half the dependents of a 300-project cold apply waited ~10 s of client retries, then asked by
signal anyway.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowExecutionStatus
from temporalio.testing import ActivityEnvironment, WorkflowEnvironment

from osprov.activities import ownership
from osprov.api import keystone_io as io
from osprov.api import ownership as own
from osprov.api import sweep as sw
from osprov.api.ownership import ObjectKey, Watch
from osprov.workflows.keystone import parents
from tests.workflows.harness import Harness, eventually
from tests.workflows.history import local_activity_results

DOMAIN = ObjectKey(kind="domain", name="service")


async def answers_sent(h: Harness, workflow_id: str) -> list[str]:
    """Workflow IDs the object's workflow sent a parent-ready answer to, in order: by a signal command
    (a large fan-out, and runs from before `keystone-watchers-told-local`), or by the tell activity."""
    history = await h.env.client.get_workflow_handle(workflow_id).fetch_history()
    sent: list[str] = []
    for e in history.events:
        if (
            e.event_type == EventType.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED
            and e.signal_external_workflow_execution_initiated_event_attributes.signal_name
            == own.SIGNAL_PARENT_READY
        ):
            sent.append(
                e.signal_external_workflow_execution_initiated_event_attributes.workflow_execution.workflow_id
            )
        for told in local_activity_results([e], own.TELL.name):
            sent += told["told"]
    return sent


async def ready_project(h: Harness, name: str) -> Any:
    wf = await h.apply("Project", {"name": name, "domain": "service"}, name=name)
    await eventually(lambda: bool(h.written.get(wf.id)), f"{name}'s status")
    assert h.written[wf.id]["conditions"][0]["status"] == "True", h.written[wf.id]
    return wf


def object_id(h: Harness, key: ObjectKey) -> str:
    return key.workflow_id(h.keystone, h.queue)


async def test_a_second_dependent_reads_the_parents_id_from_its_record(h: Harness) -> None:
    dom = h.cloud.add("domain", name="service", enabled=True)
    await ready_project(h, "p1")  # the domain's workflow starts with p1's watch and answers it
    await ready_project(h, "p2")
    p1 = object_id(h, ObjectKey(kind="project", domain="service", name="p1"))
    p2 = object_id(h, ObjectKey(kind="project", domain="service", name="p2"))

    assert [p.fields["domain_id"] for p in h.cloud.of("project")] == [dom.id, dom.id]
    domain = h.env.client.get_workflow_handle(object_id(h, DOMAIN))
    state: Any = await domain.query(own.QUERY_OBJECT)
    assert state["watchers"] == [p1, p2]  # p2 still hears of every change
    assert await answers_sent(h, domain.id) == [p1]  # before: [p1, p2]
    assert state["passes"] == 1  # before: 2 (a step, and a Keystone read, per watch)
    domain_reads = [c for c in h.cloud.calls if c == io.FIND.name]
    assert len(domain_reads) == 3, h.cloud.calls  # the domain once, each project once


async def test_a_watch_carrying_an_id_the_parent_no_longer_holds_is_answered(h: Harness) -> None:
    """The parent's ID changed between the dependent's read and its watch: the watch is a plain one."""
    h.cloud.add("domain", name="service", enabled=True)
    await ready_project(h, "p1")
    p1 = object_id(h, ObjectKey(kind="project", domain="service", name="p1"))
    domain = h.env.client.get_workflow_handle(object_id(h, DOMAIN))
    assert await answers_sent(h, domain.id) == [p1]

    stale = Watch(keystone=h.keystone, watcher=p1, key=DOMAIN, known_id="an-id-it-no-longer-has")
    await domain.signal(own.SIGNAL_WATCH, stale)
    await eventually(lambda: _sent(h, domain.id, 2), "the domain's answer to the stale watch")
    assert await answers_sent(h, domain.id) == [p1, p1]


async def test_a_watch_carrying_the_parents_id_is_only_registered(h: Harness) -> None:
    h.cloud.add("domain", name="service", enabled=True)
    await ready_project(h, "p1")
    p1 = object_id(h, ObjectKey(kind="project", domain="service", name="p1"))
    domain = h.env.client.get_workflow_handle(object_id(h, DOMAIN))
    known = await memo_id(domain)
    assert known == h.cloud.of("domain")[0].id

    fresh = Watch(keystone=h.keystone, watcher="someone-else", key=DOMAIN, known_id=known)
    await domain.signal(own.SIGNAL_WATCH, fresh)
    await eventually(lambda: _watchers_include(domain, "someone-else"), "the watch registered")
    state: Any = await domain.query(own.QUERY_OBJECT)
    assert state["passes"] == 1 and await answers_sent(h, domain.id) == [p1]


async def test_only_an_object_with_dependents_keeps_its_id_in_its_memo(h: Harness) -> None:
    """The memo costs a patch marker and an event: objects nobody watches (most of them) do not pay it."""
    dom = h.cloud.add("domain", name="service", enabled=True)
    await ready_project(h, "p1")
    domain = h.env.client.get_workflow_handle(object_id(h, DOMAIN))
    project = h.env.client.get_workflow_handle(
        object_id(h, ObjectKey(kind="project", domain="service", name="p1"))
    )
    await eventually(lambda: _memo_is(domain, dom.id), "the domain's ID in its memo")
    assert await memo_id(project) is None
    history = await project.fetch_history()
    kinds = {e.event_type for e in history.events}
    assert EventType.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED not in kinds


async def test_a_parent_gone_from_keystone_clears_its_id_from_its_memo(h: Harness) -> None:
    """A dependent never reads an ID its parent no longer has from the memo (absent: it asks by signal)."""
    dom = h.cloud.add("domain", name="service", enabled=True)
    await ready_project(h, "p1")
    domain = h.env.client.get_workflow_handle(object_id(h, DOMAIN))
    await eventually(lambda: _memo_is(domain, dom.id), "the domain's ID in its memo")

    del h.cloud.objects["domain"][dom.id]  # deleted outside osprov
    await domain.signal(sw.SIGNAL_RESYNC, "test: the domain is gone")  # what the sweep sends on drift
    await eventually(lambda: _memo_is(domain, None), "the domain's ID gone from its memo")


async def memo_id(handle: Any) -> str | None:
    described = await handle.describe()
    return await described.memo_value(own.MEMO_ID, None)


async def _memo_is(handle: Any, expected: str | None) -> bool:
    return await memo_id(handle) == expected


async def _sent(h: Harness, workflow_id: str, n: int) -> bool:
    return len(await answers_sent(h, workflow_id)) >= n


async def _watchers_include(handle: Any, watcher: str) -> bool:
    state: Any = await handle.query(own.QUERY_OBJECT)
    return watcher in state["watchers"]


async def test_a_parent_taking_only_registered_watches_continues_as_new_when_its_run_is_long(
    h: Harness, monkeypatch: Any
) -> None:
    """Registered watches run no step, and the continue-as-new check came only after a step: at 10,000
    dependents a domain's one run passed Temporal's 10,000 signals per execution and refused the next
    watches (INVALID_ARGUMENT), which failed 80 dependents' workflows (docs/benchmarks.md, P3)."""
    monkeypatch.setattr(own, "MAX_HISTORY_PER_RUN", 30)
    h.cloud.add("domain", name="service", enabled=True)
    await ready_project(h, "p1")
    domain = h.env.client.get_workflow_handle(object_id(h, DOMAIN))
    first_run = (await domain.describe()).run_id
    known = await memo_id(domain)
    watchers = [f"dependent-{i}" for i in range(30)]
    for watcher in watchers:  # one signal (and workflow task) each: the run grows past 30 events
        await domain.signal(
            own.SIGNAL_WATCH, Watch(keystone=h.keystone, watcher=watcher, key=DOMAIN, known_id=known)
        )
    await eventually(lambda: _new_run(domain, first_run), "continued as new")
    await eventually(lambda: _watchers_include(domain, watchers[-1]), "every watcher carried")
    state: Any = await domain.query(own.QUERY_OBJECT)
    assert set(watchers) <= set(state["watchers"])
    assert await memo_id(domain) == known  # dependents still read the ID


async def _new_run(handle: Any, run_id: str) -> bool:
    return bool((await handle.describe()).run_id != run_id)


async def test_a_step_whose_watch_is_refused_is_taken_again_instead_of_failing_the_workflow(
    h: Harness,
) -> None:
    """Before, a watch refused after its retries (the parent's run over a Temporal limit) failed the
    dependent's object workflow: its claimants got no answer until their resend, 10 minutes later."""
    h.cloud.add("domain", name="service", enabled=True)
    await ready_project(h, "p1")
    h.cloud.fail_watches = 5  # every attempt of p2's first watch (DEFAULT_RETRY's 5)
    wf = await h.apply("Project", {"name": "p2", "domain": "service"}, name="p2")
    p2 = h.env.client.get_workflow_handle(
        object_id(h, ObjectKey(kind="project", domain="service", name="p2"))
    )
    await eventually(lambda: h.cloud.fail_watches == 0, "the refused watch")
    await h.until(lambda: bool(h.written.get(wf.id)), "p2's status", virtual_s=200)
    await h.until(lambda: h.written[wf.id]["conditions"][0]["status"] == "True", "p2 Ready", virtual_s=200)
    description = await p2.describe()
    assert description.status == WorkflowExecutionStatus.RUNNING
    assert len(h.cloud.claims) == 2  # no resend was needed


async def test_a_dependent_whose_watch_is_deferred_uses_the_parents_id_and_registers_later(
    h: Harness,
) -> None:
    """A parent behind on its tasks defers the watch (api/ownership.py defers_watch): the dependent is
    Ready with the ID it read, owes the registration in its record, and registers on its backoff. Before,
    every watch was sent: at 10,000 dependents a domain behind collected 5,500, its task no longer fitted
    the task timeout and its run hit Temporal's 10,000 signals (docs/benchmarks.md, "The 10,000 run")."""
    dom = h.cloud.add("domain", name="service", enabled=True)
    await ready_project(h, "p1")
    domain = h.env.client.get_workflow_handle(object_id(h, DOMAIN))
    p2_key = ObjectKey(kind="project", domain="service", name="p2")
    p2 = h.env.client.get_workflow_handle(object_id(h, p2_key))

    h.cloud.defer_watches = 1
    await ready_project(h, "p2")
    assert h.cloud.defer_watches == 0
    assert [p.fields["domain_id"] for p in h.cloud.of("project")] == [dom.id, dom.id]
    record: Any = await p2.query(own.QUERY_OBJECT)
    assert [ObjectKey.model_validate(k) for k in record["unregistered"]] == [DOMAIN]
    assert not await _watchers_include(domain, p2.id)

    def registered_again() -> bool:
        return sum(1 for w in h.cloud.watches if w.watcher == p2.id and w.key == DOMAIN) == 2

    assert not registered_again()
    await h.sleep_settled(parents.REGISTER_FIRST * 1.5)  # the latest its jittered first try can come
    await h.until(registered_again, "p2 watching the domain again", virtual_s=30)
    await eventually(lambda: _watchers_include(domain, p2.id), "p2 registered with the domain")
    record = await p2.query(own.QUERY_OBJECT)
    assert record["unregistered"] == []
    assert await answers_sent(h, domain.id) == [
        object_id(h, ObjectKey(kind="project", domain="service", name="p1"))
    ]


async def test_the_watch_is_deferred_while_the_parents_run_is_far_past_its_bound(
    tenv: WorkflowEnvironment, monkeypatch: Any
) -> None:
    """activities/ownership.py watch: the ID is read from the parent's memo and, once the parent's run is
    WATCH_DEFER_MARGIN events past MAX_HISTORY_PER_RUN (its tasks are behind: one that ran would have rolled
    it), nothing more is sent to it. No worker polls the parent's queue here, so its task stays behind."""
    monkeypatch.setattr(own, "MAX_HISTORY_PER_RUN", 5)
    monkeypatch.setattr(own, "WATCH_DEFER_MARGIN", 5)
    queue = "no-worker-polls-this-queue"
    env = ActivityEnvironment(client=tenv.client)
    env.info = dataclasses.replace(env.info, task_queue=queue)
    parent = await tenv.client.start_workflow(
        own.WORKFLOW_TYPE,
        own.ObjectInput(keystone="ks", key=DOMAIN),
        id=DOMAIN.workflow_id("ks", queue),
        task_queue=queue,
        memo={own.MEMO_ID: "the-domain-id"},
    )
    answers = [
        await env.run(ownership.watch, Watch(keystone="ks", watcher=f"dependent-{i}", key=DOMAIN))
        for i in range(12)
    ]
    assert {(a.id, a.present) for a in answers if a is not None} == {("the-domain-id", True)}
    sent = [a for a in answers if a is not None and a.registered]
    assert 0 < len(sent) < len(answers) and answers[-1] is not None and not answers[-1].registered
    length = (await parent.describe()).history_length
    assert length >= own.MAX_HISTORY_PER_RUN + own.WATCH_DEFER_MARGIN

    late = await env.run(ownership.watch, Watch(keystone="ks", watcher="late", key=DOMAIN))
    assert late == own.WatchAnswer(key=DOMAIN, present=True, id="the-domain-id", registered=False)
    assert (await parent.describe()).history_length == length  # no signal: the run did not grow
    await parent.terminate("test over")


async def test_a_parent_that_never_answers_is_asked_again_and_its_id_read(h: Harness) -> None:
    """The dependent's watch found no ID (the describe slow) and the parent, its task far behind, did not
    answer: the claimant is told it waits, and the dependent asks again on the registration backoff (patch
    keystone-object-reasks-unanswered). Before, only the parent's answer could wake it: in the 10,000 run a
    group waited 50 minutes for a domain whose memo had held the ID all along."""
    dom = h.cloud.add("domain", name="service", enabled=True)
    await ready_project(h, "p1")
    h.cloud.lose_watches = 1
    wf = await h.apply("Project", {"name": "p2", "domain": "service"}, name="p2")
    await h.until(lambda: bool(h.written.get(wf.id)), "p2's first status", virtual_s=60)
    assert h.written[wf.id]["conditions"][0]["status"] == "False", h.written[wf.id]
    assert len(h.cloud.of("project")) == 1

    await h.sleep_settled(parents.REGISTER_FIRST * 1.5)  # the latest its jittered first try can come
    await h.until(lambda: h.written[wf.id]["conditions"][0]["status"] == "True", "p2 Ready", virtual_s=60)
    assert [p.fields["domain_id"] for p in h.cloud.of("project")] == [dom.id, dom.id]


async def test_a_parent_that_appears_tells_its_waiting_dependents_in_one_local_activity(h: Harness) -> None:
    """`keystone-watchers-told-local`: the domain's news goes to both waiting projects from one local
    activity. Before, one signal command each, sent one after the other: two events and a workflow task
    apiece, ~0.1 s each on the dependency chain (a user's three grants were told 0.3 s apart)."""
    waiting = [await h.apply("Project", {"name": n, "domain": "service"}, name=n) for n in ("p1", "p2")]
    p1, p2 = (object_id(h, ObjectKey(kind="project", domain="service", name=n)) for n in ("p1", "p2"))
    domain = h.env.client.get_workflow_handle(object_id(h, DOMAIN))
    await eventually(lambda: _watchers_are(domain, {p1, p2}), "both projects watching the absent domain")
    assert h.cloud.of("project") == []

    await h.apply("Domain", {"name": "service"}, name="dom")
    for wf in waiting:
        await eventually(lambda: bool(h.written.get(wf.id, {}).get("projectID")), f"{wf.id} Ready")  # noqa: B023
    [dom] = h.cloud.of("domain")
    assert [p.fields["domain_id"] for p in h.cloud.of("project")] == [dom.id, dom.id]
    history = await domain.fetch_history()
    signals = [
        e
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED
    ]
    assert signals == []  # before: a parent-ready signal command per project, one after the other
    told = [t["told"] for t in local_activity_results(history.events, own.TELL.name)]
    assert sorted(told[-1]) == sorted([p1, p2])  # the news that it exists: one activity told both


async def _watchers_are(handle: Any, expected: set[str]) -> bool:
    try:
        state: Any = await handle.query(own.QUERY_OBJECT)
    except Exception:  # not started yet
        return False
    return set(state["watchers"]) == expected


async def test_a_watch_for_the_object_the_run_holds_is_told_without_a_step(h: Harness) -> None:
    """A watch that did not read the ID from the memo (it came before the memo was written) is told what
    the run last saw, as the memo would have: no step, no Keystone read. Before, each one took a step
    (a Keystone read) right after the object's create: two of a new project's three steps."""
    h.cloud.add("domain", name="service", enabled=True)
    await ready_project(h, "p1")
    domain = h.env.client.get_workflow_handle(object_id(h, DOMAIN))
    before: Any = await domain.query(own.QUERY_OBJECT)
    reads = h.cloud.count(io.FIND.name)

    await domain.signal(
        own.SIGNAL_WATCH, Watch(keystone=h.keystone, watcher="a-dependent-now-gone", key=DOMAIN)
    )

    async def told() -> bool:
        history = await domain.fetch_history()
        tells = local_activity_results(history.events, own.TELL.name)
        return any("a-dependent-now-gone" in t["gone"] for t in tells)

    await eventually(told, "the watcher told (its workflow is gone, so it is forgotten)")
    after: Any = await domain.query(own.QUERY_OBJECT)
    assert after["passes"] == before["passes"]  # before: one more step
    assert h.cloud.count(io.FIND.name) == reads  # before: one more Keystone read
    assert "a-dependent-now-gone" not in after["watchers"]
