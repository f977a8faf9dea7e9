"""Payload encryption: histories read without the codec show no spec, status or error text; the
ciphertext is bound to its key ID; failures (messages and stack traces) are encrypted too."""

from __future__ import annotations

import base64
import json
import uuid

import pytest
from aiohttp.test_utils import TestClient, TestServer
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from google.protobuf import json_format
from temporalio import activity
from temporalio.api.common.v1 import Payload, Payloads
from temporalio.api.failure.v1 import Failure
from temporalio.client import Client, WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import DataConverter
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from osprov.activities import errors
from osprov.api import kube_io
from osprov.api.messages import SIGNAL_RESOURCE_CHANGED, EntityInput, ResourceChange, ResourceRef
from osprov.codec_server import build_app
from osprov.runtime.codec import (
    ENCODING,
    FORMAT,
    KEY_ID,
    AesGcmCodec,
    CodecConfigError,
    PayloadRejected,
    parse_keys,
)
from osprov.runtime.temporal import data_converter
from osprov.workflows.all import WORKFLOWS
from tests.workflows.fakes import FakeCloud
from tests.workflows.harness import CONFIG, eventually


def activity_name(fn: object) -> str:
    defn = activity._Definition.from_callable(fn)  # type: ignore[arg-type]
    assert defn is not None and defn.name is not None
    return defn.name


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
    with pytest.raises(PayloadRejected, match="unknown key 'a'"):
        await codec("b", f"b:{KEY_B}").decode(old)


def test_bad_keys_are_rejected_without_echoing_them() -> None:
    with pytest.raises(CodecConfigError) as err:
        parse_keys("k:" + base64.b64encode(b"short").decode())
    assert "short" not in str(err.value) and "32 bytes" in str(err.value)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (f"a:{KEY_A},a:{KEY_B}", "key ID 'a' appears twice"),
        (f"a:{KEY_A}, a:{KEY_A}", "key ID 'a' appears twice"),
        (f"a b:{KEY_A}", "must be 1-64 letters"),
        (f"{'k' * 65}:{KEY_A}", "must be 1-64 letters"),
        (f":{KEY_A}", "must look like keyid:base64key"),
    ],
)
def test_duplicate_or_malformed_key_ids_are_rejected_at_load(spec: str, message: str) -> None:
    with pytest.raises(CodecConfigError, match=message) as err:
        parse_keys(spec)
    assert KEY_A not in str(err.value) and KEY_B not in str(err.value)


async def test_ciphertext_is_bound_to_its_key_id_and_format() -> None:
    """Re-labelled payloads fail even where the key material would decrypt them (the AEAD's job)."""
    twins = codec("a", f"a:{KEY_A},b:{KEY_A}")  # the same key material under two IDs
    [sealed] = await twins.encode(plain("hello"))
    assert sealed.metadata[KEY_ID] == b"a" and sealed.metadata[FORMAT] == b"2"
    assert await twins.decode([sealed]) == plain("hello")
    relabelled = Payload(metadata=dict(sealed.metadata) | {KEY_ID: b"b"}, data=sealed.data)
    with pytest.raises(PayloadRejected, match="failed authentication"):
        await twins.decode([relabelled])
    downgraded = Payload(metadata={k: v for k, v in sealed.metadata.items() if k != FORMAT}, data=sealed.data)
    with pytest.raises(PayloadRejected, match="failed authentication"):
        await twins.decode([downgraded])
    flipped = Payload(metadata=dict(sealed.metadata), data=sealed.data[:-1] + bytes([sealed.data[-1] ^ 1]))
    with pytest.raises(PayloadRejected, match="failed authentication"):
        await twins.decode([flipped])
    unknown = Payload(metadata=dict(sealed.metadata) | {FORMAT: b"9"}, data=sealed.data)
    with pytest.raises(PayloadRejected, match="unknown encryption format"):
        await twins.decode([unknown])


async def test_format_1_payloads_written_before_still_decode() -> None:
    """What the previous codec wrote (no format metadata, no associated data): running workflows replay.
    tests/replay/test_encrypted_replay.py replays a whole history recorded by that codec."""
    nonce = b"\x01" * 12
    sealed = AESGCM(base64.b64decode(KEY_A)).encrypt(nonce, plain("old")[0].SerializeToString(), None)
    v1 = Payload(metadata={"encoding": ENCODING, KEY_ID: b"a"}, data=nonce + sealed)
    assert await codec().decode([v1]) == plain("old")
    relabelled = Payload(metadata={"encoding": ENCODING, KEY_ID: b"b"}, data=nonce + sealed)
    with pytest.raises(PayloadRejected, match="failed authentication"):
        await codec("a", f"a:{KEY_A},b:{KEY_B}").decode([relabelled])


async def test_plaintext_is_rejected_by_a_process_with_keys_and_shown_by_the_codec_server() -> None:
    with pytest.raises(PayloadRejected, match="not encrypted"):
        await codec().decode(plain("forged"))
    shown = AesGcmCodec(parse_keys(f"a:{KEY_A}"), "a", accept_plaintext=True)
    assert await shown.decode(plain("old plaintext history")) == plain("old plaintext history")


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


async def test_failure_messages_and_stack_traces_in_history_are_encrypted(tenv: WorkflowEnvironment) -> None:
    """An activity fails with the marker in its message: the history holds only "Encoded failure" and
    ciphertext. Fails when data_converter drops DefaultFailureConverterWithEncodedAttributes (checked)."""
    secure = data_converter(codec())
    client = Client(tenv.client.service_client, namespace=tenv.client.namespace, data_converter=secure)
    cloud = FakeCloud()

    # An activity fails with the marker in its message: adding the finalizer (a local activity since
    # "kube-writes-local": its failure is recorded in the marker, through the same failure converter).
    @activity.defn(name=kube_io.ADD_FINALIZER.name)
    async def add_finalizer(_: kube_io.FinalizerChange) -> kube_io.WriteResult:
        cloud.calls.append(kube_io.ADD_FINALIZER.name)
        raise errors.invalid(f"Keystone said {MARKER} is not acceptable")

    stubs = [a for a in cloud.activities() if activity_name(a) != kube_io.ADD_FINALIZER.name] + [
        add_finalizer
    ]
    queue = f"codec-{uuid.uuid4()}"
    ref = ResourceRef(kind="Project", namespace="ns", name="failing", uid=str(uuid.uuid4()))
    spec = {"name": "failing", "domain": "service", "deletionPolicy": "delete"}
    change = ResourceChange(ref=ref, generation=1, spec=spec)
    async with Worker(client, task_queue=queue, workflows=WORKFLOWS, activities=stubs):
        handle = await client.start_workflow(
            "Project",
            EntityInput(ref=ref, config=CONFIG),
            id=f"codec-{ref.uid}",
            task_queue=queue,
            start_signal=SIGNAL_RESOURCE_CHANGED,
            start_signal_args=[change],
        )
        await eventually(lambda: bool(cloud.statuses), "the failure reported in status")
        failures: list[Failure] = []
        histories: list[WorkflowHistory] = []

        async def failure_recorded() -> bool:  # a local activity's marker lands with its workflow task
            history = await handle.fetch_history()
            histories.append(history)
            failures[:] = [
                e.activity_task_failed_event_attributes.failure
                for e in history.events
                if e.HasField("activity_task_failed_event_attributes")
            ] + [
                e.marker_recorded_event_attributes.failure
                for e in history.events
                if e.HasField("marker_recorded_event_attributes")
                and e.marker_recorded_event_attributes.HasField("failure")
            ]
            return bool(failures)

        await eventually(failure_recorded, "the failure recorded in history")
        await handle.terminate("done")
    history = histories[-1]
    failure = failures[0]
    assert failure.message == "Encoded failure" and failure.stack_trace == ""
    assert failure.encoded_attributes.metadata["encoding"] == ENCODING
    raw = b"".join(e.SerializeToString() for e in history.events)
    assert MARKER.encode() not in raw and "Keystone said" not in history.to_json()
    [attributes] = await codec().decode([failure.encoded_attributes])
    decrypted = json.loads(attributes.data)
    assert MARKER in decrypted["message"] and "raise errors.invalid" in decrypted["stack_trace"]


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
    token = "t" * 32
    # As the real codec server: it only shows histories, so plaintext payloads (Temporal's own patch and
    # search-attribute markers) pass through.
    shown = AesGcmCodec(parse_keys(f"a:{KEY_A}"), "a", accept_plaintext=True)
    async with TestClient(TestServer(build_app(shown, ["http://ui"], token))) as http:
        resp = await http.post(
            "/decode",
            data=json.dumps({"payloads": payloads}),
            headers={
                "Origin": "http://ui",
                "Content-Type": "application/json",
                "Authorization": f"Bearer {token}",
            },
        )
        assert resp.status == 200 and resp.headers["Access-Control-Allow-Origin"] == "http://ui"
        decoded = json_format.Parse(await resp.text(), Payloads())
    return b"".join(p.data for p in decoded.payloads).decode("utf-8", "replace")
