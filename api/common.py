"""Building blocks shared by every kind: camelCase models, durations, conditions, references.

Pure pydantic and the standard library only: workflows import this module inside Temporal's sandbox.
Field descriptions become the CRD's OpenAPI descriptions (see api.crdgen), so they are written for users.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    GetJsonSchemaHandler,
    PlainSerializer,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic.config import JsonDict
from pydantic.json_schema import JsonSchemaValue

from osprov.api.limits import CoreSchema, ShortKeystoneName

# --- durations -------------------------------------------------------------------------------------------

# A Go duration (time.ParseDuration) without sign: one or more <number><unit>, e.g. 30s, 1m30s, 1.5h.
# The same expression is the CRD's OpenAPI pattern, so the API server and parse_duration agree.
DURATION_PATTERN = r"^([0-9]+(\.[0-9]+)?(ns|us|µs|μs|ms|s|m|h))+$"
_DURATION_RE = re.compile(DURATION_PATTERN)
_DURATION_PART_RE = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ns|us|µs|μs|ms|s|m|h)")
_UNIT_SECONDS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,  # micro sign U+00B5
    "μs": 1e-6,  # greek mu U+03BC; Go accepts both
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
MIN_RETRY_INTERVAL = timedelta(seconds=1)
RETRY_INTERVAL_CEL = "duration(self) >= duration('1s')"
RETRY_INTERVAL_MESSAGE = "retryInterval must be a Go duration of at least 1s, such as 30s or 1m30s"
# A resync is a full pass (drift checks, the User's password probe): bounded below so one resource cannot
# turn the controller into a poller of the cloud.
MIN_RESYNC_PERIOD = timedelta(minutes=1)
RESYNC_PERIOD_CEL = "duration(self) >= duration('1m')"
RESYNC_PERIOD_MESSAGE = "resyncPeriod must be a Go duration of at least 1m, such as 10m or 1h"


def parse_duration(text: str) -> timedelta:
    """Parse a Go duration such as "30s", "1m30s" or "1.5h"; raise ValueError with the accepted form."""
    if not _DURATION_RE.fullmatch(text):
        raise ValueError(
            f"{text!r} is not a duration: use a number with a unit (ns, us, ms, s, m, h), e.g. 30s or 1m30s"
        )
    seconds = sum(float(number) * _UNIT_SECONDS[unit] for number, unit in _DURATION_PART_RE.findall(text))
    return timedelta(seconds=seconds)


# --- base models -----------------------------------------------------------------------------------------


class CamelModel(BaseModel):
    """camelCase on the wire (the Kubernetes convention), snake_case in Python; unknown fields rejected."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    def to_k8s(self) -> dict[str, Any]:
        """The JSON object Kubernetes stores: camelCase keys, unset optional fields omitted."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class StatusModel(CamelModel):
    """Status is written by osprov but read back tolerantly: fields from a newer version are ignored."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")


class DeletionPolicy(StrEnum):
    RETAIN = "retain"
    DELETE = "delete"


class ManagementPolicy(StrEnum):
    MANAGED = "managed"
    UNMANAGED = "unmanaged"


class ApprovalPolicy(StrEnum):
    AUTOMATIC = "automatic"
    MANUAL = "manual"


# --- conditions (metav1.Condition) ----------------------------------------------------------------------


def _rfc3339_seconds(value: datetime) -> str:
    # metav1.Time is RFC 3339 with second precision; UTC is written with Z.
    if value.utcoffset() in (None, timedelta(0)):
        return value.strftime("%Y-%m-%dT%H:%M:%SZ")
    return value.replace(microsecond=0).isoformat()


# A timestamp as Kubernetes writes one (metav1.Time).
K8sTime = Annotated[datetime, PlainSerializer(_rfc3339_seconds, return_type=str, when_used="json")]

CONDITION_REASON_PATTERN = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"
ConditionStatus = Literal["True", "False", "Unknown"]


class ReadyReason(StrEnum):
    """Reasons of the Ready condition of the Keystone kinds."""

    RECONCILED = "Reconciled"
    RECONCILE_ERROR = "ReconcileError"


class AvailableReason(StrEnum):
    """Reasons of the Available condition of the cloud kinds (Volume, LoadBalancer, Server)."""

    PROVISIONING = "Provisioning"
    PROVISIONED = "Provisioned"
    ERRORED = "Errored"
    DEPROVISIONING = "Deprovisioning"
    FORBIDDEN = "Forbidden"  # the operator's tenancy mapping refuses it: nothing was called


class Condition(StatusModel):
    """A metav1.Condition: the same shape as every Kubernetes condition, so tools read it the usual way."""

    type: str = Field(max_length=316, description="Type of the condition, e.g. Ready or Available.")
    status: ConditionStatus = Field(description="True, False or Unknown.")
    reason: str = Field(
        min_length=1,
        max_length=1024,
        pattern=CONDITION_REASON_PATTERN,
        description="CamelCase reason, e.g. Reconciled or ReconcileError.",
    )
    message: str = Field(
        max_length=32768, description="Human-readable detail: what happened and what to fix."
    )
    last_transition_time: K8sTime = Field(
        description="When status last changed (not when it was last checked)."
    )
    observed_generation: int | None = Field(
        default=None, ge=0, description="metadata.generation the condition was computed for."
    )


def find_condition(conditions: list[Condition], type_: str) -> Condition | None:
    return next((c for c in conditions if c.type == type_), None)


def set_condition(conditions: list[Condition], new: Condition) -> list[Condition]:
    """Return conditions with `new` replacing the one of its type.

    lastTransitionTime is kept from the old condition when status did not change, as metav1 requires.
    """
    old = find_condition(conditions, new.type)
    if old is not None and old.status == new.status:
        new = new.model_copy(update={"last_transition_time": old.last_transition_time})
    return [c for c in conditions if c.type != new.type] + [new]


# --- common spec fields and references ------------------------------------------------------------------


class KeystoneRef(CamelModel):
    name: str = Field(
        default="",
        description="Keystone deployment this resource belongs to. Unset or empty: the controller's own. "
        "A resource naming another deployment is ignored by this controller.",
    )


def serves(keystone_ref_name: str, controller_keystone: str) -> bool:
    """Whether a controller serving Keystone deployment `controller_keystone` serves a resource whose
    spec.keystoneRef.name is `keystone_ref_name`: unset or empty means "the controller's own". The one rule,
    used by the bridge (on raw objects) and by every kind's workflow (on parsed specs)."""
    return keystone_ref_name in ("", controller_keystone)


def raw_keystone_ref_name(spec: dict[str, Any]) -> str:
    """spec.keystoneRef.name of a resource as the API returns it ("" when unset)."""
    ref = spec.get("keystoneRef") or {}
    return str(ref.get("name") or "") if isinstance(ref, dict) else ""


# Spec-level rules every kind has (see CommonSpec.spec_rules).
# has(): the rules hold on a spec the apiserver has not defaulted yet (offline checks, old objects).
UNMANAGED_DELETE_RULE = (
    "!has(self.managementPolicy) || self.managementPolicy != 'unmanaged' || "
    "!has(self.deletionPolicy) || self.deletionPolicy != 'delete'"
)
UNMANAGED_DELETE_MESSAGE = (
    "an unmanaged resource never deletes its OpenStack object: use deletionPolicy retain, or managementPolicy "
    "managed"
)
IMPORT_IMMUTABLE_MESSAGE = "spec.import is immutable: create a new resource to bind another object"
# `import` is a CEL keyword: the apiserver exposes the property as __import__.
IMPORT_IMMUTABLE_RULE = {
    "rule": "has(self.__import__) == has(oldSelf.__import__) && "
    "(!has(self.__import__) || self.__import__ == oldSelf.__import__)",
    "message": IMPORT_IMMUTABLE_MESSAGE,
    "fieldPath": ".import",
}
IMPORT_ID_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"


class CommonSpec(CamelModel):
    """Fields every kind has."""

    keystone_ref: KeystoneRef | None = Field(
        default=None, description="Which Keystone deployment (and so which controller) serves this resource."
    )
    deletion_policy: DeletionPolicy = Field(
        default=DeletionPolicy.RETAIN,
        description="retain (default): deleting the resource leaves the OpenStack object in place. delete: a "
        "finalizer removes the OpenStack object first. Use delete only for an object exactly one resource declares.",
    )
    retry_interval: str | None = Field(
        default=None,
        pattern=DURATION_PATTERN,
        description="Shortest delay before a failed reconcile is retried, as a Go duration (e.g. 30s, 1m30s; "
        "at least 1s). Unset: the controller's own backoff.",
        json_schema_extra={
            "x-kubernetes-validations": [{"rule": RETRY_INTERVAL_CEL, "message": RETRY_INTERVAL_MESSAGE}]
        },
    )

    management_policy: ManagementPolicy = Field(
        default=ManagementPolicy.MANAGED,
        description="managed (default): osprov creates the object when it is missing and converges what the "
        "ownership rules let it write (docs/security.md). unmanaged: osprov only observes an object that "
        "already exists — the status mirrors it; it is never created, written or deleted.",
    )
    approval_policy: ApprovalPolicy = Field(
        default=ApprovalPolicy.AUTOMATIC,
        description="automatic (default): destructive steps run when the spec asks for them. manual: each "
        "destructive step (a rebuild, a resize, a deletion with deletionPolicy delete) waits until that exact "
        "change is approved: the ready condition says AwaitingApproval and names the annotation value "
        "(osprov.osh.openstack.org/approve=ACTION:GENERATION) or `osprov approve` that approves it. An "
        "operator can require approval for whole namespaces (OSPROV_APPROVAL_NAMESPACES) whatever this says.",
    )
    resync_period: str | None = Field(
        default=None,
        pattern=DURATION_PATTERN,
        description="How often the resource is checked in full although nothing changed (drift repair, "
        "password probe), as a Go duration of at least 1m (e.g. 10m, 2h). Unset: the controller's "
        "OSPROV_RESYNC_SECONDS.",
        json_schema_extra={
            "x-kubernetes-validations": [{"rule": RESYNC_PERIOD_CEL, "message": RESYNC_PERIOD_MESSAGE}]
        },
    )

    @field_validator("retry_interval")
    @classmethod
    def _retry_interval_is_duration(cls, value: str | None) -> str | None:
        if value is not None and parse_duration(value) < MIN_RETRY_INTERVAL:
            raise ValueError(RETRY_INTERVAL_MESSAGE)
        return value

    @field_validator("resync_period")
    @classmethod
    def _resync_period_is_duration(cls, value: str | None) -> str | None:
        if value is not None and parse_duration(value) < MIN_RESYNC_PERIOD:
            raise ValueError(RESYNC_PERIOD_MESSAGE)
        return value

    @model_validator(mode="after")
    def _unmanaged_never_deletes(self) -> CommonSpec:
        if (
            self.management_policy == ManagementPolicy.UNMANAGED
            and self.deletion_policy == DeletionPolicy.DELETE
        ):
            raise ValueError(UNMANAGED_DELETE_MESSAGE)
        return self

    @classmethod
    def spec_rules(cls) -> list[dict[str, Any]]:
        """CEL rules on the whole spec that every kind of this family has. Added to the kind's own
        spec-level rules (its model_config's), which a subclass's config would otherwise replace."""
        return [{"rule": UNMANAGED_DELETE_RULE, "message": UNMANAGED_DELETE_MESSAGE}]

    @classmethod
    def __get_pydantic_json_schema__(
        cls, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        schema = handler(core_schema)
        target = handler.resolve_ref_schema(schema)
        rules = target.setdefault("x-kubernetes-validations", [])
        rules.extend(r for r in cls.spec_rules() if r not in rules)
        return schema

    @property
    def unmanaged(self) -> bool:
        return self.management_policy == ManagementPolicy.UNMANAGED

    def retry_interval_delta(self) -> timedelta | None:
        return parse_duration(self.retry_interval) if self.retry_interval else None

    def resync_period_delta(self) -> timedelta | None:
        return parse_duration(self.resync_period) if self.resync_period else None

    def keystone_ref_name(self) -> str:
        """The named Keystone deployment, "" when unset (= the controller's own)."""
        return self.keystone_ref.name if self.keystone_ref else ""


class DomainName(CamelModel):
    name: ShortKeystoneName = Field(description="Keystone name of the domain (at most 64 characters).")


class ProjectRef(CamelModel):
    """A Keystone project by name and domain name."""

    name: ShortKeystoneName = Field(description="Keystone name of the project (at most 64 characters).")
    domain: ShortKeystoneName = Field(description="Keystone name of its domain, e.g. Default.")


# --- cloud kinds (Volume, LoadBalancer, Server) ---------------------------------------------------------

PROJECT_IMMUTABLE_MESSAGE = (
    "spec.project cannot change: the object lives in its project; create a new resource"
)
IDENTITY_REF_IMMUTABLE_MESSAGE = (
    "spec.identityRef cannot change: the object lives in its Identity's project; create a new resource"
)
ONE_SCOPE_MESSAGE = (
    "set exactly one of spec.identityRef (an Identity in this namespace: its project and application "
    "credential) and spec.project (an existing project the operator maps to this namespace)"
)
SCOPE_KIND_IMMUTABLE_MESSAGE = (
    "spec.identityRef and spec.project cannot be added or removed: the object lives where it was made; "
    "create a new resource"
)
DNS_SUBDOMAIN_PATTERN = r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$"
# Spec-level rules every cloud kind carries (each kind's model_config lists them with its own).
CLOUD_SPEC_RULES: list[JsonDict] = [
    {"rule": "has(self.identityRef) != has(self.project)", "message": ONE_SCOPE_MESSAGE},
    {
        "rule": "has(self.identityRef) == has(oldSelf.identityRef)",
        "message": SCOPE_KIND_IMMUTABLE_MESSAGE,
        "fieldPath": ".identityRef",
    },
]


class LocalObjectRef(CamelModel):
    """An object of another kind in the same namespace, by name."""

    name: str = Field(
        min_length=1,
        max_length=253,
        pattern=DNS_SUBDOMAIN_PATTERN,
        description="metadata.name of the object (in this namespace).",
    )


class CloudImportFilter(CamelModel):
    name: str = Field(
        min_length=1,
        max_length=255,
        description="Exact name of the existing object in spec.project; exactly one object may match.",
    )


class CloudImport(CamelModel):
    """An existing cloud object to observe: by ID or by an exact-name filter (exactly one of them)."""

    model_config = ConfigDict(json_schema_extra={"minProperties": 1, "maxProperties": 1})

    id: str | None = Field(
        default=None,
        pattern=IMPORT_ID_PATTERN,
        description="ID of the existing object in spec.project (letters, digits, - and _).",
    )
    filter: CloudImportFilter | None = Field(default=None, description="Find the object by exact name.")

    @model_validator(mode="after")
    def _exactly_one(self) -> CloudImport:
        if (self.id is None) == (self.filter is None):
            raise ValueError(IMPORT_ONE_OF_MESSAGE)
        return self


IMPORT_ONE_OF_MESSAGE = "set exactly one of import.id and import.filter"
CLOUD_IMPORT_RULE = (
    "has(self.managementPolicy) && self.managementPolicy == 'unmanaged' ? has(self.__import__) : "
    "!has(self.__import__)"
)
CLOUD_IMPORT_MESSAGE = (
    "osprov manages only the cloud objects it creates: to bind an existing one, set both managementPolicy: "
    "unmanaged and import (it is then only observed)"
)


class CloudSpec(CommonSpec):
    """Where every cloud kind's OpenStack objects live: an Identity's project (its application credential
    makes every call), or — only where the operator maps it to this namespace — an existing project."""

    identity_ref: LocalObjectRef | None = Field(
        default=None,
        description="Identity (in this namespace) whose project the object lives in; every OpenStack call "
        "runs on that Identity's application credential. Immutable.",
        json_schema_extra={
            "x-kubernetes-validations": [
                {"rule": "self == oldSelf", "message": IDENTITY_REF_IMMUTABLE_MESSAGE}
            ]
        },
    )
    project: ProjectRef | None = Field(
        default=None,
        description="An existing Keystone project (by name and domain) the object lives in, with the "
        "controller's credentials re-scoped to it. Refused (Forbidden) unless the operator's tenancy mapping "
        "allows this project for this namespace; prefer identityRef. Immutable.",
        json_schema_extra={
            "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": PROJECT_IMMUTABLE_MESSAGE}]
        },
    )
    import_: CloudImport | None = Field(
        default=None,
        alias="import",
        description="An existing object to observe instead of creating one (requires managementPolicy "
        "unmanaged): by id, or by filter.name (exact). Immutable.",
    )

    @model_validator(mode="after")
    def _import_means_unmanaged(self) -> CloudSpec:
        if self.unmanaged != (self.import_ is not None):
            raise ValueError(CLOUD_IMPORT_MESSAGE)
        return self

    @classmethod
    def spec_rules(cls) -> list[dict[str, Any]]:
        return [
            *super().spec_rules(),
            {"rule": CLOUD_IMPORT_RULE, "message": CLOUD_IMPORT_MESSAGE},
            IMPORT_IMMUTABLE_RULE,
        ]

    @model_validator(mode="after")
    def _one_scope(self) -> CloudSpec:
        if (self.identity_ref is None) == (self.project is None):
            raise ValueError(ONE_SCOPE_MESSAGE)
        return self

    def scope_label(self) -> str:
        """How messages name where the object lives (before the Identity's project is known)."""
        if self.identity_ref is not None:
            return f"the project of Identity {self.identity_ref.name}"
        assert self.project is not None
        return f"project {self.project.name!r} in domain {self.project.domain!r}"


class CloudStatus(StatusModel):
    """Observed state written by the controller through the status subresource."""

    observed_generation: int | None = Field(
        default=None, ge=0, description="metadata.generation last reconciled."
    )
    conditions: list[Condition] = Field(
        default_factory=list,
        description="Available (Provisioning | Provisioned | Errored | Deprovisioning | Forbidden) with a user-safe "
        "message.",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
    )
