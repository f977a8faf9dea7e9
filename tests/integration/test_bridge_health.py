"""The bridge process's /healthz: alive while its watches make progress, failing when one stalls (every
request to the apiserver for that kind fails) although /metrics would still answer, alive again once the
watch recovers. Against a private apiserver, whose faults hit only this module's bridge."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devenv.kube.testing import RunningEmulator, run_emulator
from devenv.testing import StackEnv
from osprov.api.registry import kind_info
from tests.support.health import free_port, probe
from tests.support.osprov import REPO, Osprov, run_osprov
from tests.support.waiting import wait_for

pytestmark = pytest.mark.stack

WINDOW_S = 6
DOMAINS = kind_info("Domain").plural


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningEmulator]:
    with run_emulator(tmp_path_factory.mktemp("apiserver"), crds_dirs=[REPO / "deploy" / "crds"]) as emu:
        yield emu


@pytest.fixture(scope="module")
def osprov(
    identity_stack: StackEnv, emulator: RunningEmulator, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Osprov]:
    # One health port for the two processes would clash: only the bridge serves one here.
    for o in run_osprov(
        identity_stack, tmp_path_factory.mktemp("bridge-health"), kubeconfig=Path(emulator.kubeconfig)
    ):
        o.bridge.stop()
        o.bridge.env = o.bridge.env | {
            "OSPROV_HEALTH_PORT": str(free_port()),
            "OSPROV_PROGRESS_WINDOW_SECONDS": str(WINDOW_S),
        }
        o.bridge.start()
        yield o


def health(o: Osprov, path: str = "/healthz") -> tuple[int, dict[str, Any]]:
    return probe(int(o.bridge.env["OSPROV_HEALTH_PORT"]), path)


def leading_and_ready(o: Osprov) -> bool:
    status, body = health(o, "/readyz")
    return status == 200 and body["role"] == "leader"


def test_a_stalled_watch_fails_liveness_until_it_recovers(osprov: Osprov, emulator: RunningEmulator) -> None:
    wait_for(lambda: leading_and_ready(osprov), "the bridge leads and has listed every kind", 60)
    assert health(osprov)[1]["problems"] == []
    emulator.inject("watch", DOMAINS, 500, times=10**6)
    emulator.inject("list", DOMAINS, 500, times=10**6)
    emulator.cut_watches(DOMAINS)
    body = wait_for(lambda: b if (b := health(osprov)[1]) and not b["ok"] else None, "liveness failed", 60)
    assert [p.split(" made no progress")[0] for p in body["problems"]] == [
        f"watch of {DOMAINS}.{kind_info('Domain').group} in {osprov.namespace}"
    ]
    assert health(osprov, "/readyz")[0] == 503
    emulator.clear_faults()
    wait_for(lambda: health(osprov)[0] == 200, "alive again once the watch makes progress", 60)
