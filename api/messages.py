"""Workflow I/O: what the bridge sends, what an entity workflow carries and answers.

Pure pydantic: workflows import this inside Temporal's sandbox. Nothing here may hold a secret
value: a Secret is named (namespace/name) and versioned (resourceVersion), never read.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

SIGNAL_RESOURCE_CHANGED = "resource_changed"
SIGNAL_SECRET_CHANGED = "secret_changed"
QUERY_STATE = "state"


class ResourceRef(BaseModel):
    """One custom resource, pinned to its UID (a recreated resource is another workflow)."""

    kind: str
    namespace: str
    name: str
    uid: str

    @property
    def workflow_id(self) -> str:
        return workflow_id(self.kind, self.namespace, self.name, self.uid)

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"


def workflow_id(kind: str, namespace: str, name: str, uid: str) -> str:
    """`Kind/namespace/name/uid`: readable in the Web UI, unique per incarnation of the resource."""
    return f"{kind}/{namespace}/{name}/{uid}"


class ResourceChange(BaseModel):
    """Signal payload: the resource is now at `generation` (or is being deleted, or is gone)."""

    ref: ResourceRef
    generation: int
    spec: dict[str, Any] = Field(default_factory=dict)
    finalizers: list[str] = Field(default_factory=list)
    deleting: bool = False  # metadata.deletionTimestamp is set
    gone: bool = False  # the object no longer exists in the API

    def supersedes(self, other: ResourceChange | None) -> bool:
        """Later-or-equal generation wins; deletion is sticky (signals may arrive out of order)."""
        if other is None:
            return True
        if other.gone:
            return False
        if self.gone:
            return True
        if other.deleting and not self.deleting:
            return False
        if self.generation != other.generation:
            return self.generation > other.generation
        return self.deleting != other.deleting or self.finalizers != other.finalizers


class SecretChanged(BaseModel):
    """Signal payload: a Secret a resource names changed. Identity and version only, never data."""

    namespace: str
    name: str
    resource_version: str


class ConditionState(BaseModel):
    """A metav1.Condition as the workflow decides it (lastTransitionTime kept by the loop)."""

    type: str
    status: Literal["True", "False", "Unknown"]
    reason: str
    message: str = ""
    last_transition_time: datetime | None = None


class EntityConfig(BaseModel):
    """Controller-wide settings the bridge passes at start (workflows cannot read the environment)."""

    resync_seconds: float = 600.0  # periodic forced resync
    backoff_initial_seconds: float = 5.0
    backoff_max_seconds: float = 300.0
    keystone_name: str = "keystone"  # the Keystone deployment this controller serves
    upsert_search_attributes: bool = True
    # Continue-as-new after this many passes even if the server has not suggested it yet: keeps
    # every run's history short and bounded (a pass is a handful of events).
    max_passes_per_run: int = 200


class EntityState(BaseModel):
    """Everything an entity workflow knows; carried across continue-as-new and returned by the query."""

    ref: ResourceRef
    config: EntityConfig = Field(default_factory=EntityConfig)
    desired: ResourceChange | None = None
    secret_versions: dict[str, str] = Field(default_factory=dict)  # "ns/name" -> resourceVersion
    applied_fingerprint: str | None = None  # desired state last reconciled successfully
    ids: dict[str, Any] = Field(default_factory=dict)  # provider IDs, mirrored to status
    extra: dict[str, Any] = Field(default_factory=dict)  # kind-specific workflow state (e.g. rebuild marker)
    status: dict[str, Any] | None = None  # status last written to the resource
    conditions: list[ConditionState] = Field(default_factory=list)
    step: str = "starting"
    last_error: str | None = None
    failures: int = 0  # consecutive failed passes (backoff exponent)
    retry_at: datetime | None = None
    resync_at: datetime | None = None
    passes: int = 0


class EntityInput(BaseModel):
    """Workflow input: the resource, controller settings, and state carried by continue-as-new."""

    ref: ResourceRef
    config: EntityConfig = Field(default_factory=EntityConfig)
    carried: EntityState | None = None
