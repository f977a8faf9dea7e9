"""Payload encryption: histories read without the codec show no spec, status or error text."""

from __future__ import annotations

import base64
import json
import uuid

import pytest
from aiohttp.test_utils import TestClient, TestServer
from google.protobuf import json_format
from temporalio.api.common.v1 import Payload, Payloads
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import DataConverter
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from osprov.api.messages import SIGNAL_RESOURCE_CHANGED, EntityInput, ResourceChange, ResourceRef
from osprov.codec_server import build_app
from osprov.runtime.codec import AesGcmCodec, CodecConfigError, parse_keys
from osprov.runtime.temporal import data_converter
from osprov.workflows.all import WORKFLOWS
from tests.workflows.fakes import FakeCloud
from tests.workflows.harness import CONFIG, eventually

KEY_A = base64.b64encode(b"a" * 32).decode()
KEY_B = base64.b64encode(b"b" * 32).decode()
MARKER = "zz-spec-marker-7f3a"  # appears in the spec, the status and an error message


def codec(active: str = "a", keys: str = f"a:{KEY_A}") -> AesGcmCodec:
    return AesGcmCodec(parse_keys(keys), active)


def plain(value: str) -> list[Payload]:
    return pydantic_data_converter.payload_converter.to_payloads([value])


async def test_rotation_keeps_old_payloads_readable() -> None:
    old = await codec("a").encode(plain("hello"))
    rotated = codec("b", f"a:{KEY_A},b:{KEY_B}")
    assert await rotated.decode(old) == plain("hello")
    new = await rotated.encode(plain("x"))
    assert new[0].metadata["encryption-key-id"] == b"b"
    with pytest.raises(CodecConfigError, match="unknown key 'a'"):
        await codec("b", f"b:{KEY_B}").decode(old)


def test_bad_keys_are_rejected_without_echoing_them() -> None:
    with pytest.raises(CodecConfigError) as err:
        parse_keys("k:" + base64.b64encode(b"short").decode())
    assert "short" not in str(err.value) and "32 bytes" in str(err.value)


async def test_raw_history_shows_no_spec_status_or_error_text(tenv: WorkflowEnvironment) -> None:
    secure: DataConverter = data_converter(codec())
    client = Client(tenv.client.service_client, namespace=tenv.client.namespace, data_converter=secure)
    raw = Client(
        tenv.client.service_client, namespace=tenv.client.namespace, data_converter=pydantic_data_converter
    )
    cloud = FakeCloud()
    queue = f"codec-{uuid.uuid4()}"
    ref = ResourceRef(kind="Project", namespace="ns", name=MARKER, uid=str(uuid.uuid4()))
    change = ResourceChange(
        ref=ref, generation=1, spec={"name": MARKER, "domain": MARKER, "description": MARKER}
    )
    async with Worker(client, task_queue=queue, workflows=WORKFLOWS, activities=cloud.activities()):
        handle = await client.start_workflow(
            "Project",
            EntityInput(ref=ref, config=CONFIG),
            id=f"codec-{ref.uid}",
            task_queue=queue,
            start_signal=SIGNAL_RESOURCE_CHANGED,
            start_signal_args=[change],
        )
        await eventually(lambda: bool(cloud.statuses), "failure status written (domain missing)")
        assert MARKER in cloud.statuses[-1]["conditions"][0]["message"]  # the workflow saw it in clear
        history = await raw.get_workflow_handle(handle.id).fetch_history()
        await handle.terminate("done")
    text = history.to_json()
    assert MARKER not in text and MARKER not in base64.b64decode(_all_data(text)).decode("latin-1")
    decoded_by_server = await _decode_via_codec_server(text)
    assert MARKER in decoded_by_server


def _all_data(history_json: str) -> str:
    """Every base64 `data` field of the history, concatenated (to search inside payloads too)."""
    found: list[bytes] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                if k == "data" and isinstance(v, str):
                    found.append(base64.b64decode(v))
                else:
                    walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(json.loads(history_json))
    return base64.b64encode(b"".join(found)).decode()


async def _decode_via_codec_server(history_json: str) -> str:
    payloads: list[dict[str, object]] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if "metadata" in node and "data" in node:
                payloads.append(node)
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(json.loads(history_json))
    async with TestClient(TestServer(build_app(codec(), ["http://ui"]))) as http:
        resp = await http.post(
            "/decode",
            data=json.dumps({"payloads": payloads}),
            headers={"Origin": "http://ui", "Content-Type": "application/json"},
        )
        assert resp.status == 200 and resp.headers["Access-Control-Allow-Origin"] == "http://ui"
        decoded = json_format.Parse(await resp.text(), Payloads())
    return b"".join(p.data for p in decoded.payloads).decode("utf-8", "replace")
