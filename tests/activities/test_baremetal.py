"""Baremetal build progress (activities/baremetal.py) through openstacksdk's real baremetal proxy against a
local stub that answers with recorded Ironic API responses.

Why a stub: the local stack runs no Ironic (Ironic with fake hardware needs its own conductor, database,
the nova ironic virt driver instead of the fake one, and a node enrolled and moved through cleaning — not
practical in the shared OpenStack virtualenv), so this pins the part osprov owns: the request the sdk sends
(GET /v1/nodes/detail?instance_uuid=…), the mapping of Ironic provision states to Queued / Building, and
the fallback to Building when the lookup fails. The bodies are Ironic's (version discovery and node detail
shapes of ironic/api/controllers, trimmed to the fields read).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

import openstack.connection
import pytest

from osprov.activities import baremetal
from osprov.api.nova_io import BaremetalProgress, BaremetalQuery

INSTANCE = "5d4d2a7b-0d6e-4a6e-9f1c-0f4a3b2c1d00"


def _version(base: str) -> dict[str, Any]:
    return {
        "id": "v1",
        "links": [{"href": f"{base}/v1/", "rel": "self"}],
        "status": "CURRENT",
        "min_version": "1.1",
        "version": "1.87",
    }


class Stub:
    """Answers Ironic's root, /v1/ and /v1/nodes/detail; records every request's path and query."""

    def __init__(self) -> None:
        self.provision_state: str | None = "clean wait"
        self.fail = False
        self.requests: list[tuple[str, dict[str, list[str]]]] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_: Any) -> None:
                pass

            def do_GET(self) -> None:
                url = urlparse(self.path)
                stub.requests.append((url.path, parse_qs(url.query)))
                base = stub.url
                if url.path in ("", "/"):
                    body: Any = {
                        "name": "OpenStack Ironic API",
                        "versions": [_version(base)],
                        "default_version": _version(base),
                    }
                elif url.path.rstrip("/") == "/v1":
                    body = {"id": "v1", "version": _version(base), "links": _version(base)["links"]}
                elif url.path == "/v1/nodes/detail" and not stub.fail:
                    nodes = []
                    if stub.provision_state is not None:
                        nodes.append(
                            {
                                "uuid": "1be26c0b-03f2-4d2e-ae87-c02d7f33c123",
                                "instance_uuid": parse_qs(url.query).get("instance_uuid", [""])[0],
                                "provision_state": stub.provision_state,
                                "power_state": "power off",
                                "links": [],
                            }
                        )
                    body = {"nodes": nodes}
                else:
                    self.send_response(500 if stub.fail else 404)
                    self.send_header("Content-Type", "application/json")
                    self.end_headers()
                    self.wfile.write(b'{"error_message": "{\\"faultstring\\": \\"boom\\"}"}')
                    return
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("OpenStack-API-Version", "baremetal 1.87")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def ironic(monkeypatch: pytest.MonkeyPatch) -> Iterator[Stub]:
    stub = Stub()
    conn = openstack.connection.Connection(auth_type="none", baremetal_endpoint_override=stub.url)
    monkeypatch.setattr(baremetal, "admin_connection", lambda: conn)
    monkeypatch.setattr(baremetal, "flavor_is_baremetal", lambda flavor: flavor == "bm.large")
    yield stub
    stub.server.shutdown()
    conn.close()


def progress(flavor: str = "bm.large") -> BaremetalProgress:
    return baremetal.baremetal_progress(BaremetalQuery(server_id=INSTANCE, flavor=flavor))


@pytest.mark.parametrize(
    ("state", "queued"),
    [
        ("available", True),  # not yet picked up
        ("cleaning", True),
        ("clean wait", True),
        ("inspecting", True),
        ("inspect wait", True),
        ("deploying", False),
        ("wait call-back", False),
        ("deploy failed", False),  # a *fail state: still in the build pipeline
        ("clean failed", False),
        ("error", False),  # post-deploy error
        ("active", False),
    ],
)
def test_provision_states_map_to_queued_or_building(ironic: Stub, state: str, queued: bool) -> None:
    ironic.provision_state = state
    assert progress() == BaremetalProgress(baremetal=True, queued=queued, provision_state=state)
    path, query = ironic.requests[-1]
    assert path == "/v1/nodes/detail" and query["instance_uuid"] == [INSTANCE]


def test_no_node_bound_yet_is_queued(ironic: Stub) -> None:
    ironic.provision_state = None
    assert progress() == BaremetalProgress(baremetal=True, queued=True)


def test_a_failing_lookup_falls_back_to_building(ironic: Stub) -> None:
    ironic.fail = True
    assert progress() == BaremetalProgress(baremetal=True, queued=False)


def test_a_vm_flavor_never_asks_ironic(ironic: Stub) -> None:
    assert progress("m1.tiny") == BaremetalProgress()
    assert ironic.requests == []


def test_the_flavor_inventory_decides_baremetal(monkeypatch: pytest.MonkeyPatch) -> None:
    """By Nova name or ID among this controller's published Flavors (label selector); no inventory: no."""
    seen: list[str] = []

    class Api:
        def list_cluster_custom_object(self, *_: object, label_selector: str) -> dict[str, Any]:
            seen.append(label_selector)
            return {
                "items": [
                    {"spec": {"name": "bm.large", "id": "f-bm", "baremetal": True}},
                    {"spec": {"name": "m1.tiny", "id": "1", "baremetal": False}},
                ]
            }

    monkeypatch.setattr(baremetal.client, "CustomObjectsApi", lambda _: Api())
    monkeypatch.setattr(baremetal, "api_client", lambda: None)
    monkeypatch.setenv("OSPROV_INVENTORY_CONFIG", "osprov")
    assert baremetal.flavor_is_baremetal("bm.large") and baremetal.flavor_is_baremetal("f-bm")
    assert not baremetal.flavor_is_baremetal("m1.tiny") and not baremetal.flavor_is_baremetal("unknown")
    assert set(seen) == {"region.osh.openstack.org/inventory=osprov"}
    monkeypatch.setenv("OSPROV_INVENTORY_CONFIG", "")
    assert not baremetal.flavor_is_baremetal("bm.large")
