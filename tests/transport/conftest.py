"""A real Temporal frontend (the dev server from the temporal CLI in the venv) and throwaway TLS material."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import pytest_asyncio
from temporalio.testing import WorkflowEnvironment

from tests.support.certs import issue, new_ca


@dataclass(frozen=True)
class Pki:
    ca: Path  # the CA that signed the frontend's and the client's certificates
    server_cert: Path  # SAN: localhost, 127.0.0.1, temporal-frontend
    server_key: Path
    client_cert: Path  # CN osprov-worker, clientAuth
    client_key: Path
    rogue_cert: Path  # a client certificate from another CA
    rogue_key: Path


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    d = tmp_path_factory.mktemp("pki")
    ca = new_ca("osprov test CA")
    ca_crt, _ = ca.write(d, "ca")
    server = issue(ca, "temporal-frontend", server=True).write(d, "server")
    client = issue(ca, "osprov-worker", server=False).write(d, "client")
    rogue = issue(new_ca("another CA"), "intruder", server=False).write(d, "rogue")
    return Pki(ca_crt, *server, *client, *rogue)


@pytest_asyncio.fixture(scope="module")
async def frontend() -> AsyncIterator[str]:
    """host:port of a plaintext Temporal dev server (it has no TLS options: tests put a gateway in front)."""
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=str(Path(sys.executable).parent / "temporal")
    )
    try:
        yield env.client.service_client.config.target_host
    finally:
        await env.shutdown()
