"""The workflow runner: Temporal's sandbox, with osprov's modules passed through, and the payload
conversions' per-command context answered outside the sandbox when osprov's data converter has no use
for one.

Why (docs/architecture.md, "Serialization contexts answered outside the sandbox"): temporalio (1.35)
asks the workflow instance for a serialization context, and an external-storage context, for every
payload sequence of every activation and completion, several times over. The sandbox answers each by compiling
and running a snippet inside it (~40 µs); a P1 profile found those calls at 18 % of the worker's CPU,
five times the workflow code itself. osprov's converter (pydantic JSON, the AES-GCM codec, no external
storage) returns itself for every context, so the answer "no context" converts every payload exactly
as the sandbox's answer would. A converter that does use contexts gets the sandbox's answers.
"""

from __future__ import annotations

from dataclasses import dataclass

import temporalio.bridge.proto.workflow_activation
import temporalio.bridge.proto.workflow_completion
import temporalio.workflow
from temporalio.converter import (
    ActivitySerializationContext,
    DataConverter,
    SerializationContext,
    StorageDriverStoreContext,
    WorkflowSerializationContext,
)
from temporalio.worker import (
    UnsandboxedWorkflowRunner,
    WorkflowInstance,
    WorkflowInstanceDetails,
    WorkflowRunner,
)
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

KINDS = ("passthrough", "sandbox", "none")
# The contexts a worker's payload conversions are made under: a workflow's, and its activities'.
PROBES: tuple[SerializationContext, ...] = (
    WorkflowSerializationContext(namespace="probe", workflow_id="probe"),
    ActivitySerializationContext(
        namespace="probe",
        activity_id="probe",
        activity_type="probe",
        activity_task_queue="probe",
        workflow_id="probe",
        workflow_type="probe",
        is_local=True,
    ),
)


def context_free(converter: DataConverter) -> bool:
    """Whether every context converts payloads as no context does: no external storage, and a converter
    that returns itself for each kind of context."""
    return converter.external_storage is None and all(converter.with_context(p) is converter for p in PROBES)


class ContextFreeInstance(WorkflowInstance):
    """A sandboxed workflow instance whose serialization contexts are "none", asked of no sandbox."""

    def __init__(self, sandboxed: WorkflowInstance) -> None:
        self.sandboxed = sandboxed

    def activate(
        self, act: temporalio.bridge.proto.workflow_activation.WorkflowActivation
    ) -> temporalio.bridge.proto.workflow_completion.WorkflowActivationCompletion:
        return self.sandboxed.activate(act)

    def get_serialization_context(self, command_info: object) -> SerializationContext | None:
        return None  # the worker then converts with its own (context-free) converter

    def get_external_store_context(self, command_info: object) -> StorageDriverStoreContext:
        return StorageDriverStoreContext(target=None)  # unused: there is no external storage

    def get_info(self) -> temporalio.workflow.Info:
        return self.sandboxed.get_info()

    def get_thread_id(self) -> int | None:
        return self.sandboxed.get_thread_id()  # the deadlock detector's stack dump


@dataclass(frozen=True)
class ContextFreeSandboxRunner(SandboxedWorkflowRunner):
    """The sandbox, for a context-free data converter (`context_free`)."""

    def create_instance(self, det: WorkflowInstanceDetails) -> WorkflowInstance:
        return ContextFreeInstance(super().create_instance(det))


def workflow_runner(kind: str, converter: DataConverter) -> WorkflowRunner:
    """The sandbox protects replay from non-deterministic calls; re-importing osprov's modules into it for
    every workflow run costs a large share of the worker's CPU (docs/benchmarks.md). Those modules import
    nothing non-deterministic (tests/test_layers.py), so by default they are passed through."""
    if kind not in KINDS:
        raise ValueError(f"OSPROV_WORKFLOW_RUNNER must be passthrough, sandbox or none, not {kind!r}")
    if kind == "none":
        return UnsandboxedWorkflowRunner()
    restrictions = SandboxRestrictions.default
    if kind == "passthrough":
        restrictions = restrictions.with_passthrough_modules("osprov", "pydantic", "pydantic_core")
    runner = ContextFreeSandboxRunner if context_free(converter) else SandboxedWorkflowRunner
    return runner(restrictions=restrictions)
