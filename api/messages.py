"""Workflow I/O: what the bridge sends, what an entity workflow carries and answers.

Pure pydantic: workflows import this inside Temporal's sandbox. Nothing here may hold a secret
value: a Secret is named (namespace/name) and versioned (resourceVersion), never read.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Generic, Literal, TypeVar

from pydantic import AliasChoices, BaseModel, Field, model_validator

from osprov.api.activity import HEARTBEAT_SECONDS
from osprov.api.operations import OpsState

# A workflow task that does not complete within this is handed to another worker: a task whose worker died
# (kill -9) moves on in seconds. Tasks that run local activities longer heartbeat on their own.
WORKFLOW_TASK_TIMEOUT = timedelta(seconds=5)

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


def parse_workflow_id(value: str) -> ResourceRef | None:
    """The resource a workflow ID built by `workflow_id` names (None: not a resource workflow's ID)."""
    parts = value.split("/")
    if len(parts) != 4 or not all(parts):
        return None
    return ResourceRef(kind=parts[0], namespace=parts[1], name=parts[2], uid=parts[3])


class ResourceChange(BaseModel):
    """Signal payload: the resource is now at `generation` (or is being deleted, or is gone)."""

    ref: ResourceRef
    generation: int
    spec: dict[str, Any] = Field(default_factory=dict)
    finalizers: list[str] = Field(default_factory=list)
    deleting: bool = False  # metadata.deletionTimestamp is set
    gone: bool = False  # the object no longer exists in the API
    annotations: dict[str, str] = Field(default_factory=dict)  # osprov's own only (api/operations.py)
    # The operator requires approval of destructive steps in this namespace (OSPROV_APPROVAL_NAMESPACES):
    # set by the bridge, never by the resource, so a resource author cannot lift it.
    gated: bool = False

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
        return (
            self.deleting != other.deleting
            or self.finalizers != other.finalizers
            or self.annotations != other.annotations
            or self.gated != other.gated
        )


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

    @classmethod
    def of(cls, type_: str, ok: bool | None, reason: str, message: str = "") -> ConditionState:
        """The one way to build a condition: ok True/False, or None for Unknown."""
        status: Literal["True", "False", "Unknown"] = "Unknown" if ok is None else "True" if ok else "False"
        return cls(type=type_, status=status, reason=str(reason), message=message)


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
    # Activities heartbeat every second (the worker's interceptor): a step whose worker died is retried
    # elsewhere after this, not after its start-to-close timeout. None: no heartbeat timeout.
    heartbeat_seconds: float | None = HEARTBEAT_SECONDS


KindT = TypeVar("KindT")


class EntityState(BaseModel, Generic[KindT]):
    """Everything an entity workflow knows; carried across continue-as-new and returned by the query.

    `kind` is the kind's own typed state (its pydantic model: IDs, markers, counters); the loop's
    bookkeeping is the rest. Runs started before typed state carried `ids` and `extra` dicts: they are
    folded into `kind`, whose fields accept the old keys as aliases.
    """

    ref: ResourceRef
    config: EntityConfig = Field(default_factory=EntityConfig)
    desired: ResourceChange | None = None
    secret_versions: dict[str, str] = Field(default_factory=dict)  # "ns/name" -> resourceVersion
    applied_fingerprint: str | None = None  # desired state last reconciled successfully
    kind: KindT | None = None
    # The status body last written to the resource (JSON, as sent): compared to skip unchanged writes.
    written_status: dict[str, Any] | None = Field(
        default=None, validation_alias=AliasChoices("written_status", "status")
    )
    conditions: list[ConditionState] = Field(default_factory=list)
    step: str = "starting"
    last_error: str | None = None
    failures: int = 0  # consecutive failed passes (backoff exponent)
    retry_at: datetime | None = None
    resync_at: datetime | None = None
    passes: int = 0
    ops: OpsState = Field(default_factory=OpsState)  # pause, reconcile-now, resync period, Events

    @model_validator(mode="before")
    @classmethod
    def _fold_legacy_bags(cls, data: Any) -> Any:
        if isinstance(data, dict) and ("ids" in data or "extra" in data) and data.get("kind") is None:
            data = dict(data)
            data["kind"] = {**(data.pop("extra", None) or {}), **(data.pop("ids", None) or {})}
        return data


class EntityInput(BaseModel):
    """Workflow input: the resource, controller settings, and state carried by continue-as-new."""

    ref: ResourceRef
    config: EntityConfig = Field(default_factory=EntityConfig)
    carried: EntityState[Any] | None = None
    # The releases its starter's code knew (osprov.api.releases); 0 for runs started before generations.
    generation: int = 0
