"""Integration-test wiring shared by every module that runs osprov's processes."""

from __future__ import annotations

from collections.abc import Iterator

import openstack.connection
import pytest

from devenv.kube.testing import RunningEmulator, run_emulator
from devenv.testing import StackEnv
from tests.support.osprov import REPO, admin_connection


@pytest.fixture(autouse=True)
def osprov_processes_restarted(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test that kills or stops the worker or the bridge and then fails must not leave the module's
    later tests without them (one such failure in CI timed out the five tests after it)."""
    osprov = request.getfixturevalue("osprov") if "osprov" in request.fixturenames else None
    yield
    if osprov is not None:
        osprov.ensure_running()


@pytest.fixture(scope="module")
def admin(full_stack: StackEnv) -> Iterator[openstack.connection.Connection]:
    """The cloud admin's openstacksdk connection to the full stack (the tests' oracle)."""
    conn = admin_connection(full_stack)
    yield conn
    conn.close()


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningEmulator]:
    """A private apiserver whose audit log (`.audit`) holds only this module's calls: the RBAC checks
    compare what was called with what is granted."""
    audit = tmp_path_factory.mktemp("audit") / "audit.jsonl"
    with run_emulator(
        tmp_path_factory.mktemp("apiserver"),
        crds_dirs=[REPO / "deploy" / "crds"],
        extra_args=["--audit-log", str(audit)],
    ) as emu:
        emu.audit = audit  # type: ignore[attr-defined]
        yield emu
