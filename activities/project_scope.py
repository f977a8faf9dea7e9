"""Calls scoped to a cloud resource's project: on its Identity's application credential, or on the controller's
credentials re-scoped to an operator-mapped spec.project (Volume, Network, SecurityGroup activities)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

import openstack.connection
from keystoneauth1 import exceptions as ksa_exceptions

from osprov.activities import cloud
from osprov.activities.errors import error
from osprov.api.errors import UNAUTHORIZED
from osprov.api.identity_io import Credential

T = TypeVar("T")


class Scope(Protocol):
    """The *_io Scope models: the project by name and domain, and the Identity's credential if any."""

    @property
    def project(self) -> str: ...
    @property
    def domain(self) -> str: ...
    @property
    def credential(self) -> Credential | None: ...


class ProjectMissing(Exception):
    """The scoped token was refused because the project (or its domain) does not exist."""


def describe(scope: Scope) -> str:
    return f"project {scope.project!r} in domain {scope.domain!r}"


def _project_exists(scope: Scope) -> bool:
    identity: Any = cloud.admin_connection().identity  # v3 (the v2 proxy has no domains)
    domain = next((d for d in identity.domains(name=scope.domain) if d.name == scope.domain), None)
    if domain is None:
        return False
    projects = identity.projects(name=scope.project, domain_id=domain.id)
    return any(p.name == scope.project for p in projects)


def scoped(scope: Scope, call: Callable[[openstack.connection.Connection], T]) -> T:
    """Run `call` with the Identity's or the project-scoped connection; for the latter a refused token
    becomes ProjectMissing or a typed Unauthorized error that says what to grant."""
    if scope.credential is not None:
        return call(cloud.identity_connection(scope.credential))
    try:
        return call(cloud.project_connection(scope.project, scope.domain))
    except ksa_exceptions.Unauthorized:
        # The failed connection must not be reused (nor a stale token after a grant appears).
        cloud.close_thread_connections()
        if not _project_exists(scope):
            raise ProjectMissing from None
        raise error(
            UNAUTHORIZED,
            f"Keystone refused the controller a token scoped to {describe(scope)}: the project exists, so "
            "it is disabled or the controller's user has no role in it; grant one (for example with a "
            "RoleAssignment resource) — retrying",
        ) from None
