"""`osprov doctor`'s verdicts without a cloud: what each check concludes from the answers it gets (fake
clients standing for Nova and Octavia; tests/integration/test_doctor.py asks the real ones)."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest
import requests

from osprov.doctor_checks import launched_at_shown, octavia_protocols, rebuild_shows_task


def answer(status: int, body: dict[str, Any]) -> requests.Response:
    resp = requests.Response()
    resp.status_code = status
    resp._content = json.dumps(body).encode()
    resp.headers["Content-Type"] = "application/json"
    return resp


class FakeNova:
    """Accepts the rebuild (202) and answers the GET after it with `server`."""

    def __init__(self, server: dict[str, Any]) -> None:
        self.server = server
        self.calls: list[str] = []

    def post(self, url: str, **_: Any) -> requests.Response:
        self.calls.append(f"POST {url}")
        return answer(202, {})

    def get(self, url: str, **_: Any) -> requests.Response:
        self.calls.append(f"GET {url}")
        return answer(200, {"server": self.server})


def rebuilt(server: dict[str, Any]) -> Any:
    nova = FakeNova(server)
    check = rebuild_shows_task(SimpleNamespace(compute=nova), "s1", "img")  # type: ignore[arg-type]
    assert nova.calls == ["POST /servers/s1/action", "GET /servers/s1"]  # the GET right after acceptance
    return check


def test_a_rebuild_whose_get_shows_the_task_passes() -> None:
    check = rebuilt({"status": "REBUILD", "OS-EXT-STS:task_state": "rebuilding"})
    assert check.verdict == "PASS" and check.credentials == "identity"


def test_a_hidden_task_state_fails_and_says_nova_hides_it() -> None:
    check = rebuilt({"status": "REBUILD"})
    assert check.verdict == "FAIL"
    assert "has no OS-EXT-STS:task_state: Nova hides it from the Identity" in check.detail
    assert check.fix.startswith("make Nova return OS-EXT-STS:task_state")


def test_an_empty_task_state_fails_and_says_to_run_again() -> None:
    check = rebuilt({"status": "ACTIVE", "OS-EXT-STS:task_state": None})
    assert check.verdict == "FAIL" and "shows an empty OS-EXT-STS:task_state" in check.detail
    assert "run the doctor again" in check.fix


@pytest.mark.parametrize(
    ("server", "verdict"),
    [
        ({"OS-SRV-USG:launched_at": "2026-01-01T00:00:00.000000"}, "PASS"),
        ({"OS-SRV-USG:launched_at": None}, "FAIL"),
        ({}, "FAIL"),
    ],
)
def test_launched_at_must_be_shown_for_a_booted_server(server: dict[str, Any], verdict: str) -> None:
    assert launched_at_shown(server).verdict == verdict


class FakeOctavia:
    def __init__(self, *providers: str) -> None:
        self.names = providers

    def providers(self) -> list[Any]:
        return [SimpleNamespace(name=n) for n in self.names]

    def provider_flavor_capabilities(self, provider: str) -> list[Any]:
        return []


def octavia(provider: str | None, *enabled: str) -> Any:
    return octavia_protocols(SimpleNamespace(load_balancer=FakeOctavia(*enabled)), "identity", provider)  # type: ignore[arg-type]


def test_amphora_takes_every_protocol_osprov_sends() -> None:
    assert octavia(None, "amphora").verdict == "PASS"


def test_ovn_lacks_proxy_pools_and_round_robin() -> None:
    check = octavia(None, "amphora", "ovn")
    assert check.verdict == "FAIL" and "ovn lacks PROXYV2, ROUND_ROBIN" in check.detail
    assert octavia("amphora", "amphora", "ovn").verdict == "PASS"  # the operator names the one in use


def test_a_provider_that_is_not_enabled_fails_and_an_unknown_one_is_skipped() -> None:
    missing = octavia("amphora", "ovn")
    assert missing.verdict == "FAIL" and "provider 'amphora' is not enabled" in missing.detail
    assert octavia(None, "vendor-x").verdict == "SKIP"
