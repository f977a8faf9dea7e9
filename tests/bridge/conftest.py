"""The bridge's parts against the kube emulator through the official client (no local stack needed)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from kubernetes import client

from devenv.kube.testing import RunningEmulator, run_emulator
from tests.support.osprov import REPO


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningEmulator]:
    """One emulator per module with osprov's CRDs; faults are cleared after every test."""
    with run_emulator(tmp_path_factory.mktemp("kube"), crds_dirs=[REPO / "deploy" / "crds"]) as running:
        yield running


@pytest.fixture
def api(emulator: RunningEmulator) -> Iterator[client.ApiClient]:
    with emulator.api_client() as api_client:
        yield api_client
    emulator.clear_faults()


@pytest.fixture
def namespace(api: client.ApiClient) -> str:
    name = f"b-{uuid.uuid4().hex[:8]}"
    client.CoreV1Api(api).create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    return name
