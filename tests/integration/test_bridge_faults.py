"""The bridge under watch faults from the (emulated) apiserver: dropped streams and 410 Gone.

A change made while the watch is broken or expired must still reach its workflow: the bridge
resumes from its last resourceVersion after a drop and relists after 410.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeAlias

import pytest

from devenv.kube.testing import RunningEmulator, run_emulator
from devenv.testing import StackEnv
from tests.support.osprov import REPO, Osprov, admin_connection, run_osprov
from tests.support.waiting import wait_for

pytestmark = pytest.mark.stack

Identity: TypeAlias = Any  # openstacksdk's identity proxy (v3); its stubs type it as a v2|v3 union


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningEmulator]:
    """A private apiserver: its faults hit only this module's bridge (the stack's is shared)."""
    with run_emulator(
        tmp_path_factory.mktemp("apiserver"), crds_dirs=[REPO / "deploy" / "crds"], watch_window=50
    ) as emu:
        yield emu


@pytest.fixture(scope="module")
def osprov(
    identity_stack: StackEnv, emulator: RunningEmulator, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Osprov]:
    yield from run_osprov(
        identity_stack, tmp_path_factory.mktemp("bridge-faults"), kubeconfig=Path(emulator.kubeconfig)
    )


@pytest.fixture(scope="module")
def ks(identity_stack: StackEnv) -> Iterator[Identity]:
    conn = admin_connection(identity_stack)
    yield conn.identity
    conn.close()


def watching(osprov: Osprov) -> bool:
    return "bridge watching" in osprov.bridge.log_text()


def test_change_during_a_dropped_watch_is_delivered(
    osprov: Osprov, emulator: RunningEmulator, ks: Identity
) -> None:
    wait_for(lambda: watching(osprov), "bridge up")
    name = f"drop-{uuid.uuid4().hex[:8]}"
    emulator.cut_watches("domains.keystone.osh.openstack.org")
    osprov.apply("Domain", "after-drop", {"name": name})
    osprov.wait_ready("Domain", "after-drop")
    assert ks.find_domain(name) is not None


def test_expired_watch_relists_and_loses_nothing(
    osprov: Osprov, emulator: RunningEmulator, ks: Identity
) -> None:
    wait_for(lambda: watching(osprov), "bridge up")
    name = f"gone-{uuid.uuid4().hex[:8]}"
    emulator.force_gone_on_next_watch("domains.keystone.osh.openstack.org")
    emulator.cut_watches("domains.keystone.osh.openstack.org")  # the bridge re-watches and meets the 410
    osprov.apply("Domain", "after-410", {"name": name})
    osprov.wait_ready("Domain", "after-410")
    wait_for(lambda: "relisting" in osprov.bridge.log_text(), "the bridge relisted after 410")
    assert ks.find_domain(name) is not None
