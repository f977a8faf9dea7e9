"""`osprov doctor` without a cloud: the report's text and JSON, the exit status, the throwaways' clean-up
(the stack test tests/integration/test_doctor.py runs the checks against the real local cloud)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from osprov.doctor import main
from osprov.doctor_checks import (
    KNOWN_PROVIDERS,
    LISTENER_PROTOCOLS,
    MONITOR_TYPES,
    POOL_PROTOCOLS,
    Throwaways,
)
from osprov.doctor_report import Check, exit_code, failed, passed, render_json, render_text, skipped, warned

ROLES = passed("roles", "controller", "member, load-balancer_member exist in Keystone")
HIDDEN = failed(
    "rebuild-task-state",
    "identity",
    "a just-accepted rebuild's GET has no OS-EXT-STS:task_state",
    "make Nova return OS-EXT-STS:task_state",
)
NO_SERVER = skipped("launched-at", "identity", "skipped: --no-rebuild (no throwaway server)")


def test_every_check_is_one_line_and_a_failed_one_prints_its_fix() -> None:
    lines = render_text([ROLES, HIDDEN, NO_SERVER]).splitlines()
    assert lines[0].startswith("PASS  roles               [controller]  member")
    assert lines[1].startswith("FAIL  rebuild-task-state  [identity]  a just-accepted rebuild's GET has no")
    assert lines[2] == "      fix: make Nova return OS-EXT-STS:task_state"
    assert lines[3].startswith("SKIP  launched-at")
    assert lines[4] == "3 checks: 1 passed, 0 warned, 1 failed, 1 skipped"


def test_a_warned_check_prints_its_fix_and_fails_nothing() -> None:
    slow = warned("cinder-name-filter", "identity", "Cinder refuses the name filter", "allow it")
    assert render_text([slow]).splitlines() == [
        "WARN  cinder-name-filter  [identity]  Cinder refuses the name filter",
        "      fix: allow it",
        "1 checks: 0 passed, 1 warned, 0 failed, 0 skipped",
    ]
    assert exit_code([ROLES, slow]) == 0


def test_a_throwaway_that_could_not_be_deleted_is_named() -> None:
    text = render_text([ROLES], ["Nova server osprov-doctor-abc123 (id)"])
    assert (
        text.splitlines()[-1] == "NOT CLEANED UP: Nova server osprov-doctor-abc123 (id) (delete it by hand)"
    )


def test_json_says_whether_everything_passed_and_each_verdict() -> None:
    report = json.loads(render_json([ROLES, HIDDEN, NO_SERVER]))
    assert report["passed"] is False and report["leftovers"] == []
    assert [(c["name"], c["verdict"]) for c in report["checks"]] == [
        ("roles", "PASS"),
        ("rebuild-task-state", "FAIL"),
        ("launched-at", "SKIP"),
    ]
    assert report["checks"][1]["fix"] == "make Nova return OS-EXT-STS:task_state"
    assert report["checks"][1]["credentials"] == "identity"


@pytest.mark.parametrize(
    ("checks", "code"),
    [([ROLES], 0), ([ROLES, NO_SERVER], 0), ([ROLES, HIDDEN], 1), ([], 0)],
)
def test_exit_status_is_non_zero_only_when_a_check_failed(checks: list[Check], code: int) -> None:
    assert exit_code(checks) == code


def test_throwaways_are_deleted_newest_first_and_a_failed_delete_is_reported() -> None:
    done: list[str] = []
    trash = Throwaways()
    trash.add("volume a", lambda: done.append("a"))

    def broken() -> None:
        raise TimeoutError("still there")

    trash.add("volume b", broken)
    trash.add("server c", lambda: done.append("c"))
    assert trash.clean() == ["volume b"]
    assert done == ["c", "a"]
    assert trash.clean() == []  # each is deleted once


def test_the_known_providers_cover_every_protocol_osprov_sends_to_amphora() -> None:
    used = {*LISTENER_PROTOCOLS, *POOL_PROTOCOLS, *MONITOR_TYPES, "ROUND_ROBIN"}
    assert used <= KNOWN_PROVIDERS["amphora"]
    assert "PROXYV2" not in KNOWN_PROVIDERS["ovn"]


def test_controller_credentials_that_cannot_be_loaded_are_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(tmp_path / "missing-clouds.yaml"))
    monkeypatch.setenv("OS_CLOUD", "nowhere")
    assert main(["--no-rebuild"]) == 2
    assert (
        "osprov doctor: the controller's credentials: cannot load cloud 'nowhere'" in capsys.readouterr().err
    )
