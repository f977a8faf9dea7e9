"""Spec and status of the eight Keystone kinds (keystone.osh.openstack.org/v1alpha1).

Shapes follow the openstack-helm spec (seed 001): objects are named, never referenced by ID, because a name
is what a chart knows when it renders. Rules a CRD enforces with CEL are enforced here too, with the same
messages, so a model built in Python fails the same way `kubectl apply` would.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, model_validator

from osprov.api.common import (
    IMPORT_ID_PATTERN,
    IMPORT_IMMUTABLE_RULE,
    IMPORT_ONE_OF_MESSAGE,
    CamelModel,
    CommonSpec,
    Condition,
    DomainName,
    ProjectRef,
    StatusModel,
)
from osprov.api.limits import (
    Description,
    Email,
    EndpointUrl,
    KeystoneName,
    RegionId,
    ServiceType,
    ShortKeystoneName,
    immutable,
    immutable_if_set,
    keystone_immutable,
)

KEYSTONE_GROUP = "keystone.osh.openstack.org"

# The identifying fields of every kind never change (issue 12): a rename would re-target the resource onto
# another, possibly pre-existing, Keystone object and orphan the one it made. Optional ones are checked at the
# spec level (a rule on the field itself would not see it added or removed).
ImmutableName = Annotated[KeystoneName, immutable(keystone_immutable("name"))]
ImmutableShortName = Annotated[ShortKeystoneName, immutable(keystone_immutable("name"))]
ImmutableDomain = Annotated[ShortKeystoneName, immutable(keystone_immutable("domain"))]


# --- import: binding an existing Keystone object explicitly ----------------------------------------------


class KeystoneImportFilter(CamelModel):
    """No fields: the object is the one the spec's identifying fields (name, domain, type…) name."""


class KeystoneImport(CamelModel):
    """Bind an existing object instead of creating one (exactly one of id and filter)."""

    model_config = ConfigDict(json_schema_extra={"minProperties": 1, "maxProperties": 1})

    id: str | None = Field(
        default=None,
        pattern=IMPORT_ID_PATTERN,
        description="Keystone ID of the existing object; it must carry the declared name (and domain, type).",
    )
    filter: KeystoneImportFilter | None = Field(
        default=None, description="{}: the existing object the declared name (and domain, type) names."
    )

    @model_validator(mode="after")
    def _exactly_one(self) -> KeystoneImport:
        if (self.id is None) == (self.filter is None):
            raise ValueError(IMPORT_ONE_OF_MESSAGE)
        return self


class KeystoneFilterImport(CamelModel):
    """Bind the existing objects the spec names (several endpoints, or a grant, have no single ID)."""

    filter: KeystoneImportFilter = Field(description="{}: the existing objects the spec's fields name.")


IMPORT_DESCRIPTION = (
    "Bind an existing Keystone object instead of creating one: osprov never creates it, waits while it is "
    "missing, and writes it only when osprov created it or the operator allow-lists it (docs/security.md). "
    "Immutable."
)


class KeystoneSpec(CommonSpec):
    """Fields every Keystone kind has."""

    import_: KeystoneImport | None = Field(default=None, alias="import", description=IMPORT_DESCRIPTION)

    @classmethod
    def spec_rules(cls) -> list[dict[str, Any]]:
        return [*super().spec_rules(), IMPORT_IMMUTABLE_RULE]

    @property
    def import_id(self) -> str | None:
        imp = self.import_
        return imp.id if isinstance(imp, KeystoneImport) else None


# --- Domain, Project, Role, Group, Service --------------------------------------------------------------


class DomainSpec(KeystoneSpec):
    """A Keystone domain."""

    name: ImmutableShortName = Field(
        description="Keystone name of the domain (at most 64 characters). Immutable."
    )
    description: Description | None = Field(default=None, description="Domain description; drift is patched.")
    enabled: bool = Field(default=True, description="Whether the domain is enabled.")


class ProjectSpec(KeystoneSpec):
    """A Keystone project within a domain."""

    name: ImmutableShortName = Field(
        description="Keystone name of the project (at most 64 characters). Immutable."
    )
    domain: ImmutableDomain = Field(description="Keystone name of the project's domain. Immutable.")
    description: Description | None = Field(
        default=None, description="Project description; drift is patched."
    )
    enabled: bool = Field(default=True, description="Whether the project is enabled.")


class RoleSpec(KeystoneSpec):
    """A Keystone role, global or domain-specific."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [immutable_if_set("domain", keystone_immutable("domain"))]
        }
    )

    name: ImmutableName = Field(description="Keystone name of the role. Immutable.")
    domain: ShortKeystoneName | None = Field(
        default=None,
        description="Keystone name of the domain for a domain-specific role; unset: a global role. Immutable.",
    )


class GroupSpec(KeystoneSpec):
    """A Keystone group (for federated deployments; membership comes from a mapping, not from here)."""

    name: ImmutableShortName = Field(
        description="Keystone name of the group (at most 64 characters). Immutable."
    )
    domain: ImmutableDomain = Field(description="Keystone name of the group's domain. Immutable.")
    description: Description | None = Field(default=None, description="Group description; drift is patched.")


class ServiceSpec(KeystoneSpec):
    """A service catalog entry, identified in Keystone by name and type together."""

    name: ImmutableName = Field(description="Keystone name of the service. Immutable.")
    type: Annotated[ServiceType, immutable(keystone_immutable("type"))] = Field(
        description="Service type, e.g. volumev3 (lowercase letters, digits, - and _). Immutable."
    )
    description: Description | None = Field(
        default=None, description="Service description; drift is patched."
    )
    enabled: bool = Field(default=True, description="Whether the service is enabled.")


# --- User -----------------------------------------------------------------------------------------------

DEFAULT_PASSWORD_KEY = "OS_PASSWORD"


class SecretKeyRef(CamelModel):
    name: str = Field(
        min_length=1, max_length=253, description="Name of a Secret in the resource's namespace."
    )
    key: str = Field(
        default=DEFAULT_PASSWORD_KEY,
        min_length=1,
        max_length=253,
        description="Key in the Secret holding the password; OS_PASSWORD like the charts' openrc secrets.",
    )


class UserSpec(KeystoneSpec):
    """A Keystone user; its password is read from a Secret and never stored in the resource."""

    name: ImmutableName = Field(description="Keystone name of the user. Immutable.")
    domain: ImmutableDomain = Field(description="Keystone name of the user's domain. Immutable.")
    description: Description | None = Field(default=None, description="User description; drift is patched.")
    enabled: bool = Field(default=True, description="Whether the user is enabled.")
    email: Email | None = Field(default=None, description="Email address stored on the Keystone user.")
    default_project: ProjectRef | None = Field(default=None, description="The user's default project.")
    password_secret: SecretKeyRef = Field(
        description="Secret and key holding the password. Written to Keystone only when authenticating with "
        "it is rejected, so an unchanged password never revokes the user's tokens."
    )


# --- RoleAssignment -------------------------------------------------------------------------------------

SUBJECT_ONE_OF_RULE = "(has(self.user) ? 1 : 0) + (has(self.group) ? 1 : 0) == 1"
SUBJECT_ONE_OF_MESSAGE = "set exactly one subject: spec.user or spec.group"
SCOPE_ONE_OF_RULE = (
    "(has(self.project) ? 1 : 0) + (has(self.domain) ? 1 : 0) + (has(self.system) ? 1 : 0) == 1"
)
SCOPE_ONE_OF_MESSAGE = "set exactly one scope: spec.project, spec.domain or spec.system"
# A grant is identified by its role, subject and scope: none of them moves (issue 12).
GRANT_IMMUTABLE_RULES = [
    immutable_if_set(field, keystone_immutable(field))
    for field in ("user", "group", "project", "domain", "system")
]


class RoleRef(CamelModel):
    name: KeystoneName = Field(description="Keystone name of the role.")
    domain: ShortKeystoneName | None = Field(
        default=None, description="Keystone name of the role's domain for a domain-specific role."
    )


class UserRef(CamelModel):
    """A Keystone user by name and domain name."""

    name: KeystoneName = Field(description="Keystone name of the user.")
    domain: ShortKeystoneName = Field(description="Keystone name of the user's domain.")


class GroupRef(CamelModel):
    """A Keystone group by name and domain name."""

    name: ShortKeystoneName = Field(description="Keystone name of the group (at most 64 characters).")
    domain: ShortKeystoneName = Field(description="Keystone name of the group's domain.")


class RoleAssignmentSpec(KeystoneSpec):
    """A role granted to exactly one subject (user or group) on exactly one scope (project, domain or system)."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {"rule": SUBJECT_ONE_OF_RULE, "message": SUBJECT_ONE_OF_MESSAGE},
                {"rule": SCOPE_ONE_OF_RULE, "message": SCOPE_ONE_OF_MESSAGE},
                *GRANT_IMMUTABLE_RULES,
            ]
        }
    )

    import_: KeystoneFilterImport | None = Field(  # type: ignore[assignment]
        default=None, alias="import", description=IMPORT_DESCRIPTION
    )
    role: Annotated[RoleRef, immutable(keystone_immutable("role"))] = Field(
        description="The role to grant. Immutable."
    )
    user: UserRef | None = Field(default=None, description="Subject: a user by name and domain. Immutable.")
    group: GroupRef | None = Field(
        default=None, description="Subject: a group by name and domain. Immutable."
    )
    project: ProjectRef | None = Field(
        default=None, description="Scope: a project by name and domain. Immutable."
    )
    domain: DomainName | None = Field(default=None, description="Scope: a domain by name. Immutable.")
    system: Literal["all"] | None = Field(
        default=None,
        description='Scope: the whole deployment ("all"), granted with PUT /v3/system/{users|groups}/{id}/roles/'
        "{role}. An extension beyond the openstack-helm spec, which lists system scope as a follow-up. "
        "Immutable.",
    )

    @model_validator(mode="after")
    def _exactly_one_subject_and_scope(self) -> RoleAssignmentSpec:
        if (self.user is None) == (self.group is None):
            raise ValueError(SUBJECT_ONE_OF_MESSAGE)
        if sum(scope is not None for scope in (self.project, self.domain, self.system)) != 1:
            raise ValueError(SCOPE_ONE_OF_MESSAGE)
        return self


# --- Endpoint -------------------------------------------------------------------------------------------


class EndpointInterface(StrEnum):
    ADMIN = "admin"
    INTERNAL = "internal"
    PUBLIC = "public"


URLS_KEYS_RULE = "self.all(k, k in ['admin', 'internal', 'public'])"
URLS_KEYS_MESSAGE = "spec.urls keys must be admin, internal or public"
URLS_NONEMPTY_RULE = "size(self) >= 1"
URLS_NONEMPTY_MESSAGE = "spec.urls must set at least one of admin, internal or public"


class ServiceRef(CamelModel):
    name: KeystoneName = Field(description="Keystone name of the service.")
    type: ServiceType = Field(description="Type of the service, e.g. volumev3.")


class EndpointSpec(KeystoneSpec):
    """The admin, internal and public URLs of one service (looked up by name and type) in one region."""

    import_: KeystoneFilterImport | None = Field(  # type: ignore[assignment]
        default=None, alias="import", description=IMPORT_DESCRIPTION
    )
    service: Annotated[ServiceRef, immutable(keystone_immutable("service"))] = Field(
        description="The service, found in Keystone by name and type together. Immutable."
    )
    region: Annotated[RegionId, immutable(keystone_immutable("region"))] = Field(
        description="Keystone region ID; created when missing, e.g. RegionOne. Letters, digits, '.', '_' and "
        "'-' only, starting with a letter or digit: osprov looks regions up by ID in the URL path, so a '/' "
        "would reach another Keystone API. Immutable."
    )
    urls: dict[EndpointInterface, EndpointUrl] = Field(
        description="URL per interface (admin, internal, public): http or https, at most 225 characters "
        "(Keystone's limit), no user:password@, no spaces or markup. An interface left out is not published.",
        json_schema_extra={
            "x-kubernetes-validations": [
                {"rule": URLS_KEYS_RULE, "message": URLS_KEYS_MESSAGE},
                {"rule": URLS_NONEMPTY_RULE, "message": URLS_NONEMPTY_MESSAGE},
            ],
            # Bounds the CEL cost estimate; above 3 so a typo next to all three interfaces still gets the
            # clear key-name message rather than a bare "too many properties".
            "maxProperties": 8,
        },
    )

    @model_validator(mode="after")
    def _urls(self) -> EndpointSpec:
        if not self.urls:
            raise ValueError(URLS_NONEMPTY_MESSAGE)
        return self


# --- status ---------------------------------------------------------------------------------------------


class KeystoneStatus(StatusModel):
    """Observed state written by the controller through the status subresource."""

    observed_generation: int | None = Field(
        default=None, ge=0, description="metadata.generation last reconciled."
    )
    conditions: list[Condition] = Field(
        default_factory=list,
        description="Ready (Reconciled | ReconcileError) with a message that says what to fix.",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
    )


def _id_field(alias: str, what: str) -> str | None:
    return Field(default=None, alias=alias, description=f"ID Keystone assigned to the {what}.")


class DomainStatus(KeystoneStatus):
    domain_id: str | None = _id_field("domainID", "domain")


class ProjectStatus(KeystoneStatus):
    project_id: str | None = _id_field("projectID", "project")


class RoleStatus(KeystoneStatus):
    role_id: str | None = _id_field("roleID", "role")


class GroupStatus(KeystoneStatus):
    group_id: str | None = _id_field("groupID", "group")


class UserStatus(KeystoneStatus):
    user_id: str | None = _id_field("userID", "user")


class ServiceStatus(KeystoneStatus):
    service_id: str | None = _id_field("serviceID", "service")


class RoleAssignmentStatus(KeystoneStatus):
    """A grant has no ID of its own."""


class EndpointStatus(KeystoneStatus):
    endpoint_ids: dict[EndpointInterface, str] = Field(
        default_factory=dict, alias="endpointIDs", description="ID of the endpoint adopted per interface."
    )
