"""The worker and bridge as processes: no keyless start when encryption is required; over mTLS with an
API key the worker polls, and its start-up log says what protects it without a single secret."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import secrets
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest

from osprov.runtime.settings import Settings
from osprov.runtime.temporal import connect
from tests.support.tls_gateway import TlsGateway
from tests.transport.conftest import Pki
from tests.workflows.harness import eventually

API_KEY = "tmprl-worker-" + secrets.token_urlsafe(24)
UNREACHABLE = "127.0.0.1:9"  # discard port: nothing answers gRPC there


def base_env(**extra: str) -> dict[str, str]:
    """This interpreter's environment without any OSPROV_ setting (so defaults apply), plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OSPROV_")}
    return env | {"PYTHONUNBUFFERED": "1", "OSPROV_METRICS_PORT": "0"} | extra


def run(command: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", f"osprov.{command}"], env=env, capture_output=True, text=True, timeout=120
    )


def spawn(command: str, env: dict[str, str], log_path: Path) -> subprocess.Popen[bytes]:
    with open(log_path, "wb") as log:
        return subprocess.Popen(
            [sys.executable, "-m", f"osprov.{command}"], env=env, stdout=log, stderr=subprocess.STDOUT
        )


@pytest.mark.parametrize("command", ["worker", "bridge"])
def test_refuses_to_start_without_keys_unless_told_encryption_is_not_required(command: str) -> None:
    refused = run(command, base_env(OSPROV_TEMPORAL_ADDRESS=UNREACHABLE))  # the default: required
    assert refused.returncode != 0
    assert (
        "OSPROV_REQUIRE_ENCRYPTION is true but OSPROV_CODEC_KEYS is not set"
        in refused.stdout + refused.stderr
    )
    # Told otherwise (the local stack's env file), it goes on to connect (and fails only on the address).
    allowed = run(command, base_env(OSPROV_TEMPORAL_ADDRESS=UNREACHABLE, OSPROV_REQUIRE_ENCRYPTION="false"))
    assert allowed.returncode != 0 and "OSPROV_REQUIRE_ENCRYPTION" not in allowed.stdout + allowed.stderr
    assert '"encryption": "off"' in allowed.stdout  # and says so in its start-up line


def test_worker_rejects_malformed_codec_keys_without_echoing_them() -> None:
    key = base64.b64encode(secrets.token_bytes(32)).decode()
    out = run("worker", base_env(OSPROV_CODEC_KEYS=f"k1:{key},k1:{key}", OSPROV_TEMPORAL_ADDRESS=UNREACHABLE))
    assert out.returncode == 2 and "appears twice" in out.stdout and key not in out.stdout + out.stderr


async def test_worker_over_mtls_with_api_key_polls_and_logs_no_secret(
    frontend: str, pki: Pki, tmp_path: Path
) -> None:
    key_file = tmp_path / "api-key"
    key_file.write_text(API_KEY)
    codec_key = base64.b64encode(secrets.token_bytes(32)).decode()
    queue = f"tls-{uuid.uuid4()}"
    tls = {
        "OSPROV_TEMPORAL_TLS_CA": str(pki.ca),
        "OSPROV_TEMPORAL_TLS_CERT": str(pki.client_cert),
        "OSPROV_TEMPORAL_TLS_KEY": str(pki.client_key),
    }
    log_path = tmp_path / "worker.log"
    with TlsGateway(frontend, pki.server_cert, pki.server_key, client_ca=pki.ca, api_key=API_KEY) as gw:
        env = base_env(
            OSPROV_TEMPORAL_ADDRESS=gw.address,
            OSPROV_TASK_QUEUE=queue,
            OSPROV_TEMPORAL_API_KEY_FILE=str(key_file),
            OSPROV_CODEC_KEYS=f"old:{base64.b64encode(secrets.token_bytes(32)).decode()},k7:{codec_key}",
            OSPROV_CODEC_KEY_ID="k7",
            **tls,
        )
        worker = spawn("worker", env, log_path)
        try:
            client = await connect(
                Settings(
                    temporal_address=gw.address,
                    require_encryption=False,
                    temporal_api_key=API_KEY,
                    temporal_tls_ca=tls["OSPROV_TEMPORAL_TLS_CA"],
                    temporal_tls_cert=tls["OSPROV_TEMPORAL_TLS_CERT"],
                    temporal_tls_key=tls["OSPROV_TEMPORAL_TLS_KEY"],
                )
            )
            request = DescribeTaskQueueRequest(
                namespace="default",
                task_queue=TaskQueue(name=queue),
                task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
            )

            async def polling() -> bool:
                assert worker.poll() is None, log_path.read_text()
                return bool((await client.workflow_service.describe_task_queue(request)).pollers)

            await eventually(polling, "the worker polls its task queue through the mTLS gateway", 90)
        finally:
            worker.send_signal(signal.SIGTERM)
            worker.wait(60)
        assert set(gw.seen.authorizations) == {f"Bearer {API_KEY}"} and not gw.seen.refused
    text = log_path.read_text()
    [start] = [line for line in _json_lines(text) if line.get("event") == "temporal connection"]
    assert (start["tls"], start["tls_ca"], start["mtls"], start["api_key"]) == ("on", "file", "on", "set")
    assert (start["encryption"], start["encryption_key_id"], start["decryption_key_ids"]) == (
        "on",
        "k7",
        ["k7", "old"],
    )
    private_key = [ln for ln in pki.client_key.read_text().splitlines() if ln and not ln.startswith("-----")]
    for secret in (API_KEY, codec_key, *private_key):
        assert secret not in text


async def test_bridge_connects_over_mtls_with_api_key(frontend: str, pki: Pki, tmp_path: Path) -> None:
    """The bridge uses the same connect(): the gateway sees it arrive with the key (it then stops at
    the missing kubeconfig, which comes after the Temporal connection)."""
    codec_key = base64.b64encode(secrets.token_bytes(32)).decode()
    with TlsGateway(frontend, pki.server_cert, pki.server_key, client_ca=pki.ca, api_key=API_KEY) as gw:
        env = base_env(
            OSPROV_TEMPORAL_ADDRESS=gw.address,
            OSPROV_TEMPORAL_API_KEY=API_KEY,
            OSPROV_TEMPORAL_TLS_CA=str(pki.ca),
            OSPROV_TEMPORAL_TLS_CERT=str(pki.client_cert),
            OSPROV_TEMPORAL_TLS_KEY=str(pki.client_key),
            OSPROV_CODEC_KEYS=f"b1:{codec_key}",
            KUBECONFIG=str(tmp_path / "no-kubeconfig"),
        )
        out = await asyncio.to_thread(run, "bridge", env)
        assert out.returncode != 0 and "kube-config" in out.stderr
        assert gw.seen.requests and set(gw.seen.authorizations) == {f"Bearer {API_KEY}"}
    [start] = [line for line in _json_lines(out.stdout) if line.get("event") == "temporal connection"]
    assert (start["tls"], start["mtls"], start["api_key"], start["encryption"]) == ("on", "on", "set", "on")
    for secret in (API_KEY, codec_key):
        assert secret not in out.stdout + out.stderr


def _json_lines(text: str) -> list[dict[str, Any]]:
    out = []
    for line in text.splitlines():
        if line.startswith("{"):
            out.append(json.loads(line))
    return out
