"""Integration-test wiring shared by every module that runs osprov's processes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def osprov_processes_restarted(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test that kills or stops the worker or the bridge and then fails must not leave the module's
    later tests without them (one such failure in CI timed out the five tests after it)."""
    osprov = request.getfixturevalue("osprov") if "osprov" in request.fixturenames else None
    yield
    if osprov is not None:
        osprov.ensure_running()
