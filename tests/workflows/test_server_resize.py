"""The Server's resize (docs/resize.md) on the time-skipping server with a stubbed Nova, by step label.

Nova's instance actions (FakeServer.actions) are the oracle, as on the real stack: exactly one resize and one
confirmResize per target flavor, and never a confirm of a resize osprov did not submit.
"""

from __future__ import annotations

from typing import Any

from osprov.api import nova_io as io
from tests.workflows.test_server_workflow import NEW, OLD, ServerHarness, h, polls, spec

__all__ = ["h"]  # the fixture

TINY, SMALL, MEDIUM = "m1.tiny", "m1.small", "m1.medium"


def resize_state(h: ServerHarness) -> str | None:
    return (h.status().get("resize") or {}).get("state")


def sized(flavor: str, image: str = OLD) -> dict[str, Any]:
    return spec(image, flavor=flavor)


async def ready(h: ServerHarness, flavor: str = TINY) -> Any:
    wf = await h.apply("Server", sized(flavor))
    await h.until(lambda: h.condition().get("status") == "True", "server available")
    return wf


def counted(h: ServerHarness) -> tuple[int, int]:
    acts = h.nova.only().actions
    return acts.count("resize"), acts.count("confirmResize")


async def test_Z16_Z17_Z4_Z5_Z8_resize_is_submitted_once_confirmed_once_and_keeps_the_server(
    h: ServerHarness,
) -> None:
    wf = await ready(h)
    server = h.nova.only()
    assert h.status()["flavor"] == TINY
    await h.signal(wf, 2, sized(SMALL))
    await h.until(lambda: h.nova.resizes == [SMALL], "resize submitted")
    # Armed first: the mirror showed Initiated (with the count taken before the call) before the submit.
    mirrored = [s["resize"] for s in h.cloud.statuses if s.get("resize")]
    assert mirrored[0] == {"targetFlavor": SMALL, "state": "Initiated", "resizeActions": 0}
    await h.until(lambda: resize_state(h) == "Resizing", "accepted")
    assert h.status()["phase"] == "Building" and h.condition("Healthy")["reason"] == "Provisioning"
    server.finish_resize()
    await h.until(lambda: resize_state(h) == "Confirmed", "confirmed")
    await h.until(lambda: h.condition().get("status") == "True", "available again")
    assert h.status()["flavor"] == SMALL and h.status()["serverID"] == server.id
    assert counted(h) == (1, 1) and h.nova.confirms == 1
    await polls(h, 2)  # settled: nothing more is sent
    assert counted(h) == (1, 1) and h.nova.count(io.CREATE_SERVER.name) == 1


async def test_Z17_unknown_outcome_of_an_accepted_resize_is_attributed_by_the_count_not_resent(
    h: ServerHarness,
) -> None:
    wf = await ready(h)
    h.nova.resize_outcomes = ["lost_accepted"]
    await h.signal(wf, 2, sized(SMALL))
    await h.until(lambda: resize_state(h) == "Resizing", "attributed from the action count")
    h.nova.only().finish_resize()
    await h.until(lambda: resize_state(h) == "Confirmed", "confirmed")
    assert h.nova.resizes == [SMALL] and counted(h) == (1, 1)


async def test_Z17_unknown_outcome_never_accepted_is_submitted_again(h: ServerHarness) -> None:
    wf = await ready(h)
    h.nova.resize_outcomes = ["lost"]
    await h.signal(wf, 2, sized(SMALL))
    await h.until(lambda: len(h.nova.resizes) == 2, "resubmitted: the count did not grow")
    h.nova.only().finish_resize()
    await h.until(lambda: resize_state(h) == "Confirmed", "confirmed")
    assert counted(h) == (1, 1)


async def test_Z17_409_recounts_then_submits_once_more(h: ServerHarness) -> None:
    wf = await ready(h)
    h.nova.resize_outcomes = ["conflict"]
    await h.signal(wf, 2, sized(SMALL))
    await h.until(lambda: len(h.nova.resizes) == 2, "resubmitted after the 409")
    h.nova.only().finish_resize()
    await h.until(lambda: resize_state(h) == "Confirmed", "confirmed")
    assert counted(h) == (1, 1)


async def test_Z7_confirm_accepted_with_its_answer_lost_is_never_sent_again(h: ServerHarness) -> None:
    wf = await ready(h)
    h.nova.confirm_outcomes = ["lost_accepted"]
    await h.signal(wf, 2, sized(SMALL))
    await h.until(lambda: resize_state(h) == "Resizing", "accepted")
    h.nova.only().finish_resize()
    await h.until(lambda: resize_state(h) == "Confirmed", "confirmed")
    assert h.nova.confirms == 1 and counted(h) == (1, 1)


async def test_Z6_confirm_that_never_reached_nova_is_sent_again(h: ServerHarness) -> None:
    wf = await ready(h)
    h.nova.confirm_outcomes = ["lost"]
    await h.signal(wf, 2, sized(SMALL))
    await h.until(lambda: resize_state(h) == "Resizing", "accepted")
    h.nova.only().finish_resize()
    await h.until(lambda: resize_state(h) == "Confirmed", "confirmed")
    assert h.nova.confirms == 2 and counted(h) == (1, 1)


async def test_Z3_a_verify_resize_osprov_did_not_submit_is_reported_and_never_confirmed(
    h: ServerHarness,
) -> None:
    wf = await ready(h)
    server = h.nova.only()
    server.resize_outside(SMALL)
    await h.until(lambda: "did not submit" in h.condition().get("message", ""), "reported")
    assert h.condition()["reason"] == "Errored"
    await h.signal(wf, 2, sized(SMALL))  # even when it is the flavor the spec now asks for
    await polls(h, 3)
    await h.until_step(wf, "Z3")
    assert h.nova.confirms == 0 and h.nova.resizes == [] and counted(h) == (1, 0)
    server.status = "ACTIVE"  # the operator confirmed it in Nova
    await h.until(lambda: h.condition().get("status") == "True", "available")
    assert h.nova.confirms == 0 and h.status()["flavor"] == SMALL


async def test_Z2_Z1_error_during_the_resize_parks_and_a_new_flavor_rearms(h: ServerHarness) -> None:
    wf = await ready(h)
    server = h.nova.only()
    await h.signal(wf, 2, sized(SMALL))
    await h.until(lambda: resize_state(h) == "Resizing", "accepted")
    server.status, server.task_state = "ERROR", None
    await h.until(lambda: h.condition().get("reason") == "Errored", "parked")
    assert resize_state(h) == "Failed" and "resize failed" in h.condition()["message"]
    await polls(h, 2)
    await h.until_step(wf, "Z1: parked")
    assert h.nova.resizes == [SMALL] and h.nova.confirms == 0
    server.status, server.resizing_to = "ACTIVE", None  # the operator reset the server
    await h.signal(wf, 3, sized(MEDIUM))
    await h.until(lambda: h.nova.resizes == [SMALL, MEDIUM], "re-armed for the new flavor")
    server.finish_resize()
    await h.until(lambda: resize_state(h) == "Confirmed", "confirmed")
    assert h.status()["resize"]["targetFlavor"] == MEDIUM and counted(h) == (2, 1)


async def test_Z13_P2_an_unsettled_rebuild_blocks_the_resize_until_it_settles(h: ServerHarness) -> None:
    wf = await ready(h)
    server = h.nova.only()
    await h.signal(wf, 2, sized(TINY, NEW))
    await h.until(lambda: h.nova.accepted == [NEW], "rebuild accepted")  # REBUILD, not settled
    await h.signal(wf, 3, sized(SMALL, NEW))
    await polls(h, 3)
    assert h.nova.resizes == [] and (h.status().get("rebuild") or {}).get("state") == "Rebuilding"
    server.settle()
    await h.until(lambda: h.nova.resizes == [SMALL], "resized once the rebuild settled")
    server.finish_resize()
    await h.until(lambda: resize_state(h) == "Confirmed", "confirmed")
    assert h.nova.submits == [NEW] and counted(h) == (1, 1)


async def test_Z12_a_flavor_change_before_first_boot_waits_then_resizes(h: ServerHarness) -> None:
    h.nova.boot_on_create = False
    wf = await h.apply("Server", sized(TINY))
    await h.until(lambda: h.nova.count(io.CREATE_SERVER.name) == 1, "created")
    await h.signal(wf, 2, sized(SMALL))
    await polls(h, 3)
    assert h.nova.resizes == []
    h.nova.only().boot()
    await h.until(lambda: h.nova.resizes == [SMALL], "resized after the first boot", virtual_s=60)


async def test_a_flavor_given_by_id_is_resolved_once_and_never_resized(h: ServerHarness) -> None:
    await ready(h, flavor="1")  # m1.tiny's ID: the read shows the name
    await polls(h, 3)
    assert h.nova.resizes == [] and h.nova.count(io.FLAVOR_NAME.name) == 1
    assert h.nova.count(io.RESIZE_ACTIONS.name) == 0  # nothing to attribute: not counted


async def test_P2_an_unsettled_resize_blocks_the_rebuild_until_it_is_confirmed(h: ServerHarness) -> None:
    wf = await ready(h)
    server = h.nova.only()
    await h.signal(wf, 2, sized(SMALL))
    await h.until(lambda: resize_state(h) == "Resizing", "resize accepted")  # RESIZE, in flight
    await h.signal(wf, 3, sized(SMALL, NEW))
    await polls(h, 3)
    assert h.nova.submits == [] and h.status().get("rebuild") is None
    server.finish_resize()
    await h.until(lambda: h.nova.submits == [NEW], "rebuilt once the resize was confirmed")
    assert resize_state(h) == "Confirmed" and counted(h) == (1, 1)
