"""`osprov status` without a stack: which kind a name means, and what the report says (the integration
test tests/integration/test_operator_view.py runs it against the real Temporal)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from osprov.status import Report, render, resolve_kind


@pytest.mark.parametrize("text", ["Volume", "volume", "volumes", "VOLUMES"])
def test_a_kind_is_named_by_kind_or_plural_in_any_case(text: str) -> None:
    assert resolve_kind(text).kind == "Volume"


def test_an_unknown_kind_lists_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown kind 'volumez' \(known: .*Volume"):
        resolve_kind("volumez")


def rows(text: str) -> dict[str, str]:
    return {k: v.strip() for k, v in (line.split(":", 1) for line in text.splitlines())}


def test_a_stuck_resource_shows_its_step_failure_and_timers() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    report = Report(
        kind="Project",
        namespace="openstack",
        name="p",
        workflow_id="Project/openstack/p/uid",
        run_status="RUNNING",
        ready="False",
        reason="ReconcileError",
        message="domain 'x' does not exist in Keystone yet",
        step="waiting for domain x",
        last_failure="domain 'x' does not exist in Keystone yet",
        failures=3,
        wanted_generation=2,
        applied_generation=1,
        retry_at=now + timedelta(seconds=20),
        retrying=["keystone.find (attempt 4): openstack unreachable"],
        events=["Normal Waiting (x1): domain 'x' does not exist in Keystone yet"],
    )
    text = render(report, now)
    shown = rows(text.split("\nevents:")[0])
    assert text.split("\nevents:\n")[1] == "  Normal Waiting (x1): domain 'x' does not exist in Keystone yet"
    assert shown["web ui"] == "- (set OSPROV_TEMPORAL_UI_URL)"
    assert shown["ready"] == "False (ReconcileError): domain 'x' does not exist in Keystone yet"
    assert shown["step"] == "waiting for domain x"
    assert shown["last failure"].endswith("(3 failed passes in a row)")
    assert shown["generation"] == "wanted 2, applied 1"
    assert shown["next retry"].endswith("(in 20s)") and shown["next resync"] == "-"
    assert shown["retrying now"] == "keystone.find (attempt 4): openstack unreachable"
    assert not report.converged


def test_converged_means_ready_at_the_wanted_generation() -> None:
    def report(applied: int) -> Report:
        return Report(
            "Domain", "n", "d", "w", "RUNNING", ready="True", wanted_generation=3, applied_generation=applied
        )

    assert report(3).converged
    assert not report(2).converged
