"""Issue 19: a Volume's spec.size grows and the volume is extended in place (rows C6, C7; S2, S3 on the way).

The time-skipping server with the stubbed Cinder (fakes_cinder), whose extend follows the real activity's
rule: read first, send only for a provisioned, smaller volume. `extends_accepted` is the fake Cinder's own
record of accepted extends: exactly one per target size is the property under test.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest_asyncio
from temporalio.client import WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from osprov.activities.cinder import ONLINE_EXTEND_REFUSED
from osprov.api import cinder_io as io
from tests.workflows.fakes_cinder import FINALIZER, CinderHarness, cinder_harness

UID = "5e1f0c3a-0000-4000-8000-000000000019"
NAME = io.volume_name(UID)


def spec(size: int) -> dict[str, Any]:
    return {"project": {"name": "p", "domain": "Default"}, "size": size, "deletionPolicy": "delete"}


@pytest_asyncio.fixture
async def h(tenv: WorkflowEnvironment) -> AsyncIterator[CinderHarness]:
    async for hs in cinder_harness(tenv):
        yield hs


async def at_one_gib(h: CinderHarness, status: str = "available") -> tuple[WorkflowHandle[Any, Any], str]:
    """A provisioned 1 GiB Volume (in `status`: in-use stands for attached); its handle and volume ID."""
    vol = h.cinder.add(NAME, h.cinder.add_project(), status)
    wf = await h.apply("Volume", spec(1), uid=UID, name="data")
    await h.until(lambda: h.condition().get("reason") == "Provisioned", "volume provisioned")
    return wf, vol.id


async def grown(h: CinderHarness, generation: int = 2, within: int = 60) -> None:
    await h.until(
        lambda: (
            h.status().get("observedGeneration") == generation
            and h.status().get("size") == 2
            and h.condition().get("reason") == "Provisioned"
        ),
        "status reports 2 GiB",
        within,
    )


async def test_C6_S3_S1_a_larger_size_extends_once_and_the_status_reports_it(h: CinderHarness) -> None:
    wf, vid = await at_one_gib(h)
    h.cinder.extend_script = ["extending", "extending"]
    await h.signal(wf, 2, spec(2), finalizers=[FINALIZER])
    await grown(h)
    assert h.cinder.extends_accepted == [(vid, 2)] and h.cinder.volumes[vid].size == 2
    messages = [c["message"] for st in h.cloud.statuses for c in st.get("conditions", [])]
    assert "waiting for Cinder: the volume is extending" in messages  # S3 named while Cinder works
    # Nothing more for this target: the resync's full pass reads 2 GiB and sends nothing.
    finds = h.cinder.count(io.FIND_VOLUMES.name)
    await h.env.sleep(601)
    await h.until(lambda: h.cinder.count(io.FIND_VOLUMES.name) > finds, "resync read")
    assert h.cinder.count(io.EXTEND_VOLUME.name) == 1 and h.cinder.extends_accepted == [(vid, 2)]


async def test_C6_an_attached_volume_is_extended_online_and_stays_in_use(h: CinderHarness) -> None:
    wf, vid = await at_one_gib(h, "in-use")
    await h.signal(wf, 2, spec(2), finalizers=[FINALIZER])
    await grown(h)
    assert h.cinder.extends_accepted == [(vid, 2)] and h.cinder.volumes[vid].status == "in-use"
    assert "in-use" in h.condition()["message"]


async def test_S3_a_volume_found_extending_is_waited_for_never_extended_again(h: CinderHarness) -> None:
    # A pass after a crash: Cinder already accepted the extend (extending), the answer was never recorded.
    vol = h.cinder.add(NAME, h.cinder.add_project(), "extending", "extending", "extending", "available")
    vol.grow_to = 2
    await h.apply("Volume", spec(2), uid=UID, name="data")
    await grown(h, generation=1)
    assert h.cinder.count(io.EXTEND_VOLUME.name) == 0 and h.cinder.extends_accepted == []


async def test_C6_a_lost_answer_is_retried_and_the_retry_sends_nothing(h: CinderHarness) -> None:
    wf, vid = await at_one_gib(h)
    h.cinder.lost_extend_answers = 1  # Cinder accepts, the worker never hears: Temporal retries the activity
    await h.signal(wf, 2, spec(2), finalizers=[FINALIZER])
    await grown(h)
    assert h.cinder.count(io.EXTEND_VOLUME.name) == 2  # two attempts …
    assert h.cinder.extends_accepted == [(vid, 2)]  # … one extend: the retry read it extending


async def test_C6_refused_online_extend_says_detach_and_backs_off(h: CinderHarness) -> None:
    h.cinder.online_extend = False  # an older Cinder (no volume API 3.42), or its policy refuses
    wf, vid = await at_one_gib(h, "in-use")
    await h.signal(wf, 2, spec(2), finalizers=[FINALIZER])
    await h.until(lambda: h.condition().get("message") == ONLINE_EXTEND_REFUSED, "refusal reported")
    assert h.condition()["status"] == "False"
    tries = h.cinder.count(io.EXTEND_VOLUME.name)
    await h.env.sleep(120)
    assert h.cinder.count(io.EXTEND_VOLUME.name) - tries <= 5  # the loop's backoff, no retry storm
    h.cinder.volumes[vid].status = "available"  # detached: extended offline
    await grown(h, within=600)
    assert h.cinder.extends_accepted == [(vid, 2)]


async def test_C7_an_extend_cinder_gives_up_on_is_reported_and_retried_with_backoff(h: CinderHarness) -> None:
    h.cinder.extend_outcome = "reset"  # Cinder 29's scheduler found no room: back to available at 1 GiB
    wf, vid = await at_one_gib(h)
    await h.signal(wf, 2, spec(2), finalizers=[FINALIZER])
    await h.until(lambda: "did not extend" in h.condition().get("message", ""), "failure reported")
    cond = h.condition()
    assert cond["status"] == "False" and cond["reason"] == "Errored" and h.status()["size"] == 1
    accepted = len(h.cinder.extends_accepted)
    await h.env.sleep(120)
    assert len(h.cinder.extends_accepted) - accepted <= 5  # one extend per backoff step
    h.cinder.extend_outcome = "grown"  # room again: the next retry's extend takes
    await grown(h, within=600)
    assert h.cinder.volumes[vid].size == 2


async def test_S2_error_extending_is_errored_and_not_extended_again(h: CinderHarness) -> None:
    h.cinder.extend_outcome = "error"  # the driver failed: Cinder 29 leaves error_extending
    wf, vid = await at_one_gib(h)
    await h.signal(wf, 2, spec(2), finalizers=[FINALIZER])
    await h.until(lambda: h.condition().get("reason") == "Errored", "error reported")
    assert h.condition()["message"] == io.ERROR_MESSAGE and "error_extending" not in str(h.status())
    await h.env.sleep(300)
    assert h.cinder.extends_accepted == [(vid, 2)]
