"""The bridge reads Secrets as metadata only: it gets their versions, never their data, and refuses a
server that answers the metadata-only request with full Secrets."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from kubernetes import client

from osprov.bridge.health import BridgeHealth
from osprov.bridge.watch import Obj, Target, Watcher
from tests.support.waiting import wait_for

PASSWORD = "never-in-the-bridge"


def start(api: client.ApiClient, target: Target, health: BridgeHealth) -> tuple[Watcher, list[Obj]]:
    """A Secret watcher; returns it and everything it delivered (snapshot items and event objects)."""
    seen: list[Obj] = []
    health.term_started([str(target)])
    w = Watcher(
        api,
        target,
        lambda _, items: seen.extend(items),
        lambda _, kind, obj: seen.append(obj),
        threading.Event(),
        on_progress=lambda t, listed: health.progress(str(t), listed),
        on_death=lambda t, error: health.died(str(t), error),
    )
    threading.Thread(target=w.run, daemon=True).start()
    return w, seen


def test_secrets_arrive_without_their_data(api: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api)
    secret = client.V1Secret(metadata=client.V1ObjectMeta(name="pw"), string_data={"OS_PASSWORD": PASSWORD})
    core.create_namespaced_secret(namespace, secret)
    watcher, seen = start(api, Target("", "v1", "secrets", namespace), BridgeHealth("test", 300))
    try:
        wait_for(lambda: any(o["metadata"]["name"] == "pw" for o in seen), "the Secret listed")
        core.patch_namespaced_secret("pw", namespace, {"stringData": {"OS_PASSWORD": PASSWORD + "2"}})
        wait_for(lambda: len({o["metadata"]["resourceVersion"] for o in seen}) == 2, "its change watched")
    finally:
        watcher.close()
    assert {o["kind"] for o in seen} == {"PartialObjectMetadata"}
    assert not [o for o in seen if set(o) - {"kind", "apiVersion", "metadata"}]
    assert PASSWORD not in json.dumps(seen)
    assert base64.b64encode(PASSWORD.encode()).decode() not in json.dumps(seen)


class FullSecrets(BaseHTTPRequestHandler):
    """An apiserver that ignores the Accept header and lists full Secrets."""

    def do_GET(self) -> None:
        data = base64.b64encode(PASSWORD.encode()).decode()
        body: dict[str, Any] = {
            "kind": "SecretList",
            "apiVersion": "v1",
            "metadata": {"resourceVersion": "7"},
            "items": [{"metadata": {"name": "pw", "resourceVersion": "7"}, "data": {"OS_PASSWORD": data}}],
        }
        raw = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args: Any) -> None:
        return None


@pytest.fixture
def careless_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), FullSecrets)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_a_server_that_sends_full_secrets_is_refused(careless_server: str) -> None:
    configuration = client.Configuration()
    configuration.host = careless_server
    health = BridgeHealth("test", 300)
    target = Target("", "v1", "secrets", "openstack")
    with client.ApiClient(configuration) as api:
        watcher, seen = start(api, target, health)
        report = wait_for(lambda: None if (r := health.live()).ok else r, "the watch refused the answer")
        watcher.close()
    assert seen == []
    assert report.details["problems"] == [
        f"watch of {target} died: NotMetadata: asked for PartialObjectMetadataList of {target}, "
        "the server sent 'SecretList'"
    ]
