"""Issue 18 on the time-skipping server with a stubbed Nova: the SSH mode reaches the create request
(K1–K4), and a pinned create (N1–N3) asks the operator's mapping and Placement before any Nova write."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest_asyncio
from temporalio.testing import WorkflowEnvironment

from osprov.api import nova_io as io
from osprov.api import tenancy_io
from tests.workflows.fakes import FakeCloud
from tests.workflows.fakes_nova import nova_harness
from tests.workflows.test_server_workflow import OLD, ServerHarness, spec

PINNED: dict[str, Any] = {"placement": {"hypervisorHostname": "node-1"}}


@pytest_asyncio.fixture
async def h(tenv: WorkflowEnvironment) -> AsyncIterator[ServerHarness]:
    async with nova_harness(tenv, FakeCloud(), f"q-{uuid.uuid4()}") as hs:
        yield hs
        await hs.close()


async def created(h: ServerHarness, extra: dict[str, Any]) -> io.CreateServer:
    await h.apply("Server", spec(**extra))
    await h.until(lambda: h.condition().get("status") == "True", "server available")
    [req] = h.nova.creates
    return req


async def test_K3_ca_mode_asks_the_activity_for_the_ca_and_sends_no_key(h: ServerHarness) -> None:
    req = await created(h, {"ssh": {"mode": "ca"}, "userData": "#!/bin/sh\n"})
    assert (req.key_name, req.ssh_ca, req.identity_keypair, req.user_data) == (
        None,
        True,
        False,
        "#!/bin/sh\n",
    )


async def test_K1_unset_mode_sends_spec_keypair_as_before(h: ServerHarness) -> None:
    req = await created(h, {"keypair": "mine"})
    assert (req.key_name, req.ssh_ca, req.identity_keypair) == ("mine", False, False)


async def test_N1_pinning_not_allowed_is_forbidden_and_creates_nothing(h: ServerHarness) -> None:
    await h.apply("Server", spec(OLD, **PINNED))
    await h.until(lambda: h.condition().get("reason") == "Forbidden", "Forbidden")
    assert "may not be pinned" in h.condition()["message"]
    assert h.nova.count(io.CREATE_SERVER.name) == 0 and h.nova.count(io.PLACEMENT_PREFLIGHT.name) == 0


async def test_N3_a_preflight_miss_waits_visibly_then_the_pinned_create_runs(h: ServerHarness) -> None:
    h.cloud.identity.pinning = tenancy_io.PinningPolicy(
        allowed=True, preflight=True, required_traits=["CUSTOM_A"]
    )
    h.nova.preflight_missing = ["lacks required trait CUSTOM_A"]
    await h.apply("Server", spec(OLD, **PINNED))
    await h.until(
        lambda: "lacks required trait CUSTOM_A" in h.condition().get("message", ""), "the miss shown"
    )
    assert h.condition()["status"] == "False" and h.condition()["reason"] == "Provisioning"
    assert h.nova.count(io.CREATE_SERVER.name) == 0
    [asked, *_] = h.nova.preflights
    assert (asked.provider, asked.flavor, asked.required_traits) == ("node-1", "m1.tiny", ["CUSTOM_A"])
    misses = h.nova.count(io.PLACEMENT_PREFLIGHT.name)
    h.nova.preflight_missing = []  # the operator fixed the node
    await h.until(lambda: h.condition().get("status") == "True", "server available", virtual_s=900)
    assert h.nova.count(io.PLACEMENT_PREFLIGHT.name) == misses + 1  # asked again on the retry timer
    [req] = h.nova.creates
    assert (req.hypervisor_hostname, req.host) == ("node-1", None)


async def test_N2_allowed_without_preflight_creates_pinned_at_once(h: ServerHarness) -> None:
    h.cloud.identity.pinning = tenancy_io.PinningPolicy(allowed=True)
    req = await created(h, {"placement": {"host": "compute-1"}})
    assert (req.host, req.hypervisor_hostname) == ("compute-1", None)
    assert h.nova.count(io.PLACEMENT_PREFLIGHT.name) == 0


async def test_a_baremetal_build_is_Queued_until_Ironic_deploys_then_Building(h: ServerHarness) -> None:
    h.nova.boot_on_create = False
    h.nova.settle_in_wait = False
    h.nova.baremetal = io.BaremetalProgress(baremetal=True, queued=True, provision_state="clean wait")
    await h.apply("Server", spec())
    await h.until(lambda: h.status().get("phase") == "Queued", "Phase Queued")
    assert "queued for hardware (Ironic provision state clean wait)" in h.condition()["message"]
    h.nova.baremetal = io.BaremetalProgress(baremetal=True, queued=False, provision_state="wait call-back")
    await h.until(lambda: h.status().get("phase") == "Building", "Phase Building", virtual_s=120)
    assert "deploying (Ironic provision state wait call-back)" in h.condition()["message"]
    h.nova.only().boot()
    await h.until(lambda: h.status().get("phase") == "Running", "Running", virtual_s=120)


async def test_a_vm_build_stays_Building(h: ServerHarness) -> None:
    h.nova.boot_on_create = False
    h.nova.settle_in_wait = False
    await h.apply("Server", spec())
    await h.until(lambda: h.nova.count(io.BAREMETAL_PROGRESS.name) >= 1, "asked once")
    await h.until(lambda: h.status().get("phase") == "Building", "Phase Building")
