"""Fixtures for the kube emulator's conformance tests."""

from __future__ import annotations

import itertools
import json
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from devenv.kube.testing import RunningEmulator, kube_emulator, run_emulator

__all__ = ["kube_emulator"]

FIXTURES = Path(__file__).parent / "fixtures"
GROUP, VERSION, PLURAL = "test.osprov.dev", "v1", "widgets"
_names = itertools.count()


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningEmulator]:
    """One emulator (with the Widget CRD) per test module; tests use their own namespaces."""
    with run_emulator(tmp_path_factory.mktemp("kube"), crds_dirs=[FIXTURES / "crds"]) as running:
        yield running


@pytest.fixture
def api(emulator: RunningEmulator) -> Iterator[client.ApiClient]:
    with emulator.api_client() as api_client:
        yield api_client


@pytest.fixture
def namespace(api: client.ApiClient) -> str:
    name = f"ns-{next(_names)}-{int(time.time() * 1000) % 100000}"
    core_v1(api).create_namespace({"metadata": {"name": name}})
    return name


def widget(name: str, **spec: Any) -> dict[str, Any]:
    body_spec = {"name": name}
    body_spec.update(spec)
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Widget",
        "metadata": {"name": name},
        "spec": body_spec,
    }


def crd_body(kind: str, plural: str, scope: str, schema: dict[str, Any]) -> dict[str, Any]:
    """A one-version CustomResourceDefinition of the test group."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": scope,
            "names": {"kind": kind, "plural": plural, "singular": kind.lower()},
            "versions": [
                {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": schema}}
            ],
        },
    }


def status_of(exc: client.ApiException) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(exc.body or "{}")
    return body


def raw_watch(
    url: str, path: str, params: dict[str, str], count: int, deadline_s: float = 10.0
) -> list[dict[str, Any]]:
    """Read up to `count` watch events (stopping early when the server ends the stream)."""
    query = urllib.parse.urlencode({"watch": "true", **params})  # params may spell watch=1/True
    events: list[dict[str, Any]] = []
    end = time.monotonic() + deadline_s
    with urllib.request.urlopen(f"{url}{path}?{query}", timeout=deadline_s) as response:
        while len(events) < count and time.monotonic() < end:
            line = response.readline()
            if not line:
                break
            events.append(json.loads(line))
    return events


def custom_objects(api: client.ApiClient) -> Any:
    """CustomObjectsApi, typed Any: its methods return `object` and tests read the JSON they carry."""
    return client.CustomObjectsApi(api)


def api_of(cls: Any, api: client.ApiClient) -> Any:
    """An official client API class, typed Any so tests may pass plain dict bodies and read optional fields."""
    return cls(api)


def core_v1(api: client.ApiClient) -> Any:
    """CoreV1Api, typed Any so tests may pass plain dict bodies as the apiserver accepts them."""
    return client.CoreV1Api(api)


def raw_request(
    api: client.ApiClient,
    method: str,
    path: str,
    body: Any = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, Any]:
    """One request through the official client's REST layer, answer unparsed by its models: (status, JSON)."""
    all_headers = {"Content-Type": "application/json", "Accept": "application/json", **(headers or {})}
    response = api.call_api(method, api.configuration.host + path, all_headers, body)
    response.read()
    return response.status, json.loads(response.data or b"null")
