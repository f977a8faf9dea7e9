"""Inputs and outputs of the Keystone activities (the contract between workflows and activities/keystone.py).

Workflows import this module inside Temporal's sandbox and call activities by the names below, so it
imports only pydantic and the standard library. Nothing here ever carries a secret value: passwords
travel as a SecretRef and are read inside the activity.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from osprov.api.activity import Activity

KeystoneKind = Literal["domain", "project", "role", "group", "user", "service", "endpoint", "region"]

# Filters Keystone applies server-side for each kind (the activity post-filters for exact equality on
# every one of them). "id" is accepted for every kind and becomes a GET by ID. For region, the ID is the
# region's name.
FIND_FILTERS: dict[str, frozenset[str]] = {
    "domain": frozenset({"id", "name"}),
    "project": frozenset({"id", "name", "domain_id", "parent_id"}),
    "role": frozenset({"id", "name", "domain_id"}),
    "group": frozenset({"id", "name", "domain_id"}),
    "user": frozenset({"id", "name", "domain_id"}),
    "service": frozenset({"id", "name", "type"}),
    "endpoint": frozenset({"id", "service_id", "region_id", "interface"}),
    "region": frozenset({"id", "parent_region_id"}),
}

# The fields KeystoneObject.fields carries per kind (absent in Keystone = None), i.e. what workflows
# compare for drift. Create/update accept only these (plus "id" on region create).
KIND_FIELDS: dict[str, tuple[str, ...]] = {
    "domain": ("name", "description", "enabled"),
    "project": ("name", "description", "enabled", "domain_id", "parent_id"),
    "role": ("name", "description", "domain_id"),
    "group": ("name", "description", "domain_id"),
    "user": ("name", "description", "enabled", "domain_id", "default_project_id", "email"),
    "service": ("name", "type", "description", "enabled"),
    "endpoint": ("service_id", "region_id", "interface", "url", "enabled"),
    "region": ("description", "parent_region_id"),
}


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Find(_Model):
    """An exact, filtered lookup. `name` is shorthand for filters["name"] (for region: the region ID)."""

    kind: KeystoneKind
    name: str | None = None
    filters: dict[str, str] = Field(default_factory=dict)

    def effective_filters(self) -> dict[str, str]:
        merged = dict(self.filters)
        if self.name is not None:
            merged["id" if self.kind == "region" else "name"] = self.name
        return merged


class KeystoneObject(_Model):
    kind: KeystoneKind
    id: str
    fields: dict[str, Any]


class Create(_Model):
    """Create-if-absent: `find` is run first and any existing match (lowest ID) is returned instead.

    `absent`: the workflow's own lookup just found no match, so the first attempt of a unique-name kind
    POSTs without looking again (Keystone's 409 still adopts a concurrent creator's object); a service or
    endpoint, which Keystone lets have twins, always looks first, and so does every retry, because an
    earlier attempt may have created it before its answer was lost."""

    kind: KeystoneKind
    fields: dict[str, Any]
    find: Find
    absent: bool = False

    @model_validator(mode="after")
    def _same_kind(self) -> Create:
        if self.find.kind != self.kind:
            raise ValueError(f"find.kind {self.find.kind!r} differs from kind {self.kind!r}")
        return self


class Update(_Model):
    """PATCH exactly `fields` on the object; the ID is kept."""

    kind: KeystoneKind
    id: str
    fields: dict[str, Any]


class Delete(_Model):
    kind: KeystoneKind
    id: str


class Grant(_Model):
    """A role assignment: exactly one subject (user_id | group_id), exactly one scope
    (project_id | domain_id | system="all")."""

    role_id: str
    user_id: str | None = None
    group_id: str | None = None
    project_id: str | None = None
    domain_id: str | None = None
    system: Literal["all"] | None = None

    @model_validator(mode="after")
    def _one_subject_one_scope(self) -> Grant:
        if (self.user_id is None) == (self.group_id is None):
            raise ValueError("a grant needs exactly one of user_id and group_id")
        scopes = [s for s in (self.project_id, self.domain_id, self.system) if s is not None]
        if len(scopes) != 1:
            raise ValueError("a grant needs exactly one of project_id, domain_id and system")
        return self


class SecretRef(_Model):
    """A key of a Kubernetes Secret; the value is read only inside the activity that needs it."""

    namespace: str
    name: str
    key: str = "OS_PASSWORD"


class Probe(_Model):
    user_id: str
    user_name: str
    domain_id: str
    secret: SecretRef


class ProbeResult(_Model):
    """valid: the Secret's password authenticates; unauthorized: Keystone answered 401 (write it)."""

    outcome: Literal["valid", "unauthorized"]


class SetPassword(_Model):
    user_id: str
    secret: SecretRef


# --- activities: the typed contracts (osprov.api.activity) -----------------------------------------
FIND: Activity[Find, list[KeystoneObject]] = Activity("keystone.find", Find, list[KeystoneObject])
CREATE: Activity[Create, KeystoneObject] = Activity("keystone.create", Create, KeystoneObject)
UPDATE: Activity[Update, KeystoneObject] = Activity("keystone.update", Update, KeystoneObject)
DELETE: Activity[Delete, bool] = Activity("keystone.delete", Delete, bool)
CHECK_GRANT: Activity[Grant, bool] = Activity("keystone.check_grant", Grant, bool)
PUT_GRANT: Activity[Grant, None] = Activity("keystone.put_grant", Grant, type(None))
REVOKE_GRANT: Activity[Grant, bool] = Activity("keystone.revoke_grant", Grant, bool)
PROBE_PASSWORD: Activity[Probe, ProbeResult] = Activity("keystone.probe_password", Probe, ProbeResult)
SET_PASSWORD: Activity[SetPassword, None] = Activity("keystone.set_password", SetPassword, type(None))
