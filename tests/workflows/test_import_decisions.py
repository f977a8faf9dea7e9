"""workflows/observe_import.py, one test per row: O3, O4 and the chosen object; OS1–OS3; OL1–OL3."""

from __future__ import annotations

import pytest

from osprov.api.common import AvailableReason, CloudImport
from osprov.workflows.observe_import import (
    SERVER_SETTLED,
    Chosen,
    Refused,
    Wanted,
    choose,
    mirror_load_balancer,
    mirror_server,
)

BY_ID = Wanted.of(CloudImport.model_validate({"id": "abc"}))
BY_NAME = Wanted.of(CloudImport.model_validate({"filter": {"name": "web"}}))


def test_O1_the_import_is_read_by_id_or_by_exact_name() -> None:
    assert (BY_ID.id, BY_ID.name, BY_ID.shown) == ("abc", None, "ID abc")
    assert (BY_NAME.id, BY_NAME.name, BY_NAME.shown) == (None, "web", "name web")


def test_O3_nothing_found_is_refused_with_what_to_fix() -> None:
    got = choose(list[str](), BY_ID, "Nova server", "project Default/p")
    assert isinstance(got, Refused) and got.rule == "O3"
    assert got.message.startswith("no Nova server with ID abc in project Default/p: nothing to observe")
    assert "fix spec.import" in got.message


def test_O4_two_with_the_name_are_refused_asking_for_an_id() -> None:
    got = choose(["a", "b"], BY_NAME, "Octavia load balancer", "project Default/p")
    assert isinstance(got, Refused) and got.rule == "O4"
    assert "2 Octavia load balancers are named web" in got.message and "import one by ID" in got.message


def test_the_one_object_is_chosen() -> None:
    assert choose(["a"], BY_NAME, "Nova server", "p") == Chosen("a")


@pytest.mark.parametrize("status", sorted(SERVER_SETTLED))
def test_OS1_a_settled_server_is_available(status: str) -> None:
    m = mirror_server("s-1", status)
    assert (m.rule, m.available, m.settling) == ("OS1", True, False) and status in m.message


def test_OS2_a_server_in_error_is_errored_until_it_changes() -> None:
    m = mirror_server("s-1", "ERROR")
    assert (m.rule, m.reason, m.available, m.settling) == ("OS2", AvailableReason.ERRORED, False, False)


@pytest.mark.parametrize("status", ["BUILD", "REBUILD", "RESIZE", "VERIFY_RESIZE", "MIGRATING", "UNKNOWN"])
def test_OS3_a_changing_server_is_read_again_soon(status: str) -> None:
    m = mirror_server("s-1", status)
    assert (m.rule, m.reason, m.settling) == ("OS3", AvailableReason.PROVISIONING, True)


def test_OL1_an_active_load_balancer_is_available() -> None:
    m = mirror_load_balancer("lb-1", "ACTIVE")
    assert (m.rule, m.available, m.settling) == ("OL1", True, False)


def test_OL2_a_load_balancer_in_error_is_errored_until_it_changes() -> None:
    m = mirror_load_balancer("lb-1", "ERROR")
    assert (m.rule, m.reason, m.settling) == ("OL2", AvailableReason.ERRORED, False)


@pytest.mark.parametrize("status", ["PENDING_CREATE", "PENDING_UPDATE", "PENDING_DELETE"])
def test_OL3_a_pending_load_balancer_is_read_again_soon(status: str) -> None:
    m = mirror_load_balancer("lb-1", status)
    assert (m.rule, m.reason, m.settling) == ("OL3", AvailableReason.PROVISIONING, True)
