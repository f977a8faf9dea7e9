"""worker/runner.py: the sandbox's serialization contexts, answered outside it for osprov's converter.

What must hold: the payloads a worker writes with the context-free runner are encrypted and read back
as they are under Temporal's own sandbox runner (a replay with each), and a converter that does use
contexts keeps the sandbox's answers.
"""

from __future__ import annotations

import base64
import copy
import dataclasses
import uuid
from collections.abc import Sequence
from typing import Self
from unittest import mock

import pytest
from temporalio.api.common.v1 import Payload
from temporalio.client import WorkflowHistory
from temporalio.converter import SerializationContext, WithSerializationContext
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer, Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from osprov.runtime.codec import ENCODING, AesGcmCodec, parse_keys
from osprov.runtime.temporal import PYDANTIC, data_converter
from osprov.worker.runner import (
    ContextFreeInstance,
    ContextFreeSandboxRunner,
    context_free,
    workflow_runner,
)
from tests.worker.context_free_workflow import RunnerTestWorkflow, echo
from tests.workflows.conftest import test_server_path as server_path

KEY = base64.b64encode(b"r" * 32).decode()  # a test key, used only here


def codec(kind: type[AesGcmCodec] = AesGcmCodec) -> AesGcmCodec:
    return kind(parse_keys(f"k1:{KEY}"), "k1")


class ContextAwareCodec(AesGcmCodec, WithSerializationContext):
    """A codec that would encrypt differently per context: the sandbox must answer for it."""

    def with_context(self, context: SerializationContext) -> Self:
        return copy.copy(self)  # another codec for each context


@pytest.mark.parametrize("encrypted", [False, True])
def test_osprovs_converter_gets_the_context_free_runner(encrypted: bool) -> None:
    converter = data_converter(codec()) if encrypted else PYDANTIC
    assert context_free(converter)
    for kind in ("passthrough", "sandbox"):
        assert type(workflow_runner(kind, converter)) is ContextFreeSandboxRunner


def test_a_converter_that_uses_contexts_keeps_the_sandboxs_answers() -> None:
    converter = dataclasses.replace(data_converter(codec()), payload_codec=codec(ContextAwareCodec))
    assert not context_free(converter)
    assert type(workflow_runner("passthrough", converter)) is SandboxedWorkflowRunner


def test_the_contexts_are_not_asked_of_the_sandbox() -> None:
    """The cost this removes: each answer ran a snippet inside the sandbox (~40 µs, many per task)."""
    sandboxed = mock.Mock(spec=["activate", "get_info", "get_thread_id"])
    instance = ContextFreeInstance(sandboxed)
    assert instance.get_serialization_context(None) is None
    assert instance.get_external_store_context(None).target is None
    instance.get_info()
    assert [c[0] for c in sandboxed.method_calls] == ["get_info"]


def test_an_unknown_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="OSPROV_WORKFLOW_RUNNER"):
        workflow_runner("fast", PYDANTIC)


def _payloads(history: WorkflowHistory) -> Sequence[Payload]:
    """The activities' inputs and results and the signal's input, as the worker wrote them."""
    found: list[Payload] = []
    for e in history.events:
        if e.HasField("activity_task_scheduled_event_attributes"):
            found += e.activity_task_scheduled_event_attributes.input.payloads
        if e.HasField("activity_task_completed_event_attributes"):
            found += e.activity_task_completed_event_attributes.result.payloads
        if e.HasField("workflow_execution_signaled_event_attributes"):
            found += e.workflow_execution_signaled_event_attributes.input.payloads
    return found


async def test_a_workflow_run_by_the_context_free_runner_replays_under_the_sandbox() -> None:
    converter = data_converter(codec())
    env = await WorkflowEnvironment.start_time_skipping(
        data_converter=converter, test_server_existing_path=server_path()
    )
    try:
        queue = f"runner-{uuid.uuid4().hex[:8]}"
        runner = workflow_runner("passthrough", converter)
        assert type(runner) is ContextFreeSandboxRunner
        async with Worker(
            env.client,
            task_queue=queue,
            workflows=[RunnerTestWorkflow],
            activities=[echo],
            workflow_runner=runner,
        ):
            handle = await env.client.start_workflow(
                RunnerTestWorkflow.run, "hello", id=f"runner-test-{queue}", task_queue=queue
            )
            await handle.signal(RunnerTestWorkflow.hear, "heard")
            assert await handle.result() == ["echo hello", "echo echo hello", "heard"]
            history = await handle.fetch_history()
    finally:
        await env.shutdown()
    written = _payloads(history)
    assert len(written) >= 3 and all(p.metadata["encoding"] == ENCODING for p in written)
    for replaying in (SandboxedWorkflowRunner(), runner):
        result = await Replayer(
            workflows=[RunnerTestWorkflow], data_converter=converter, workflow_runner=replaying
        ).replay_workflow(history, raise_on_replay_failure=False)
        assert result.replay_failure is None, result.replay_failure
