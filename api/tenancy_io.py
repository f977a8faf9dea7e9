"""The operator's tenancy mapping, as the workflows ask it: which managed domain a namespace's Identities live
in, and which existing projects its resources may name with spec.project.

The mapping is worker configuration (a mounted file, activities/tenancy.py; format in docs/identity.md),
never a resource: tenants cannot write it. Workflows ask through these local
activities before any cloud call; a refusal is reported as reason Forbidden and nothing is written.
Pure pydantic: workflows import it inside Temporal's sandbox.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from osprov.api.activity import Activity


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ProjectRequest(_Model):
    namespace: str
    project: str
    domain: str


class Verdict(_Model):
    allowed: bool
    message: str = ""  # why not (user-safe: says what the operator must map)


class IdentityRequest(_Model):
    namespace: str


class IdentityPolicy(_Model):
    """allowed: the namespace has a managed domain; roles: what every Identity's user gets on its project."""

    allowed: bool
    message: str = ""
    domain: str | None = None
    roles: list[str] = Field(default_factory=list)


class PinningRequest(_Model):
    namespace: str


class PinningPolicy(_Model):
    """allowed: the namespace's Servers may be pinned (spec.placement); preflight: ask Placement first, with
    `required_traits` added to the flavor's trait:* extra specs."""

    allowed: bool
    message: str = ""
    preflight: bool = False
    required_traits: list[str] = Field(default_factory=list)


PROJECT_ALLOWED: Activity[ProjectRequest, Verdict] = Activity(
    "tenancy.project_allowed", ProjectRequest, Verdict
)
IDENTITY_POLICY: Activity[IdentityRequest, IdentityPolicy] = Activity(
    "tenancy.identity_policy", IdentityRequest, IdentityPolicy
)
PINNING_POLICY: Activity[PinningRequest, PinningPolicy] = Activity(
    "tenancy.pinning_policy", PinningRequest, PinningPolicy
)
