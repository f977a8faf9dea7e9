"""The operator's tenancy mapping: which managed Keystone domain each namespace's Identities live in, which
existing projects its resources may name with spec.project, and the roles every Identity gets.

Worker configuration, never a resource (tenants cannot write it): a YAML file named by OSPROV_TENANCY_FILE,
in a cluster a ConfigMap in the controller's namespace mounted into the worker (docs/identity.md). It is
read inside these activities and re-read when the file changes (a ConfigMap update reaches the pod's file
within the kubelet's sync period). No file, or a namespace it does not name: everything is refused.

    roles: [member, load-balancer_member]   # granted to every Identity's user on its project (the default)
    namespaces:
      team-a:
        domain: tenants                     # team-a's Identities are made in this (existing) domain
        projects:                           # existing projects team-a's resources may name (spec.project)
          - {name: team-a-legacy, domain: Default}
        any_project: false                  # true: any existing project (the operator's explicit choice)
        provider_networks: [physnet1]       # physical networks its Networks may make VLAN networks on
        pinning:                            # its Servers may set spec.placement (admin-only in Nova)
          placement_preflight: true         # ask Placement whether the node fits before creating
          required_traits: [CUSTOM_TENANT_A]  # added to the flavor's trait:* extra specs
    vlan_ranges:                            # the VLAN IDs osprov allocates per physical network
      physnet1: {first: 100, last: 199}
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from osprov.activities.contract import implements
from osprov.activities.errors import invalid
from osprov.api.limits import ShortKeystoneName
from osprov.api.tenancy_io import (
    IDENTITY_POLICY,
    PINNING_POLICY,
    PROJECT_ALLOWED,
    IdentityPolicy,
    IdentityRequest,
    PinningPolicy,
    PinningRequest,
    ProjectRequest,
    Verdict,
)
from osprov.api.vlan_io import VlanRange

TENANCY_FILE_ENV = "OSPROV_TENANCY_FILE"
DEFAULT_ROLES = ("member", "load-balancer_member")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class MappedProject(_Strict):
    name: ShortKeystoneName
    domain: ShortKeystoneName


class Pinning(_Strict):
    placement_preflight: bool = False
    required_traits: list[str] = Field(default_factory=list)


class NamespaceMapping(_Strict):
    domain: ShortKeystoneName | None = None  # the managed domain of its Identities (None: no Identities)
    projects: list[MappedProject] = Field(default_factory=list)
    # Any existing project, on the controller's re-scoped credentials: the pre-Identity behaviour, only where
    # the operator says so explicitly (a namespace it fully trusts, e.g. its own tests).
    any_project: bool = False
    # Physical networks its Networks may make VLAN provider networks on (on the controller's credentials,
    # with an ID from osprov's allocator: activities/vlan.py).
    provider_networks: list[str] = Field(default_factory=list)
    # Pinned Servers run their create on the controller's credentials (Nova's policy for a requested
    # destination is admin): only where the operator says so.
    pinning: Pinning | None = None


class TenancyConfig(_Strict):
    roles: list[str] = Field(default_factory=lambda: list(DEFAULT_ROLES), min_length=1)
    namespaces: dict[str, NamespaceMapping] = Field(default_factory=dict)
    vlan_ranges: dict[str, VlanRange] = Field(default_factory=dict)  # physical network -> its VLAN IDs


_lock = threading.Lock()
_cache: dict[str, tuple[tuple[int, int], TenancyConfig]] = {}


def load(path: str) -> TenancyConfig:
    """The mapping in `path`, parsed once per version of the file. Raises Invalid (never quoting the file)."""
    try:
        stat = Path(path).stat()
        version = (stat.st_mtime_ns, stat.st_size)
        with _lock:
            hit = _cache.get(path)
        if hit is not None and hit[0] == version:
            return hit[1]
        data = yaml.safe_load(Path(path).read_text()) or {}
        config = TenancyConfig.model_validate(data)
    except OSError as exc:
        raise invalid(
            f"cannot read the tenancy mapping {path} ({TENANCY_FILE_ENV}): {exc.strerror}"
        ) from None
    except yaml.YAMLError:
        raise invalid(f"the tenancy mapping {path} ({TENANCY_FILE_ENV}) is not valid YAML") from None
    except ValidationError as exc:
        where = "; ".join(".".join(str(p) for p in e["loc"]) + f": {e['msg']}" for e in exc.errors())
        raise invalid(f"the tenancy mapping {path} ({TENANCY_FILE_ENV}) is invalid: {where}") from None
    with _lock:
        _cache[path] = (version, config)
    return config


def current() -> TenancyConfig | None:
    """The configured mapping; None when the worker has none (everything is refused)."""
    path = os.environ.get(TENANCY_FILE_ENV, "").strip()
    return load(path) if path else None


def _unmapped(namespace: str) -> str:
    return (
        f"namespace {namespace} is not in the operator's tenancy mapping ({TENANCY_FILE_ENV} of the worker)"
    )


@implements(PROJECT_ALLOWED)
def project_allowed(request: ProjectRequest) -> Verdict:
    """Whether the namespace may name this existing project (the controller's credentials re-scoped to it)."""
    config = current()
    mapping = config.namespaces.get(request.namespace) if config else None
    wanted = MappedProject(name=request.project, domain=request.domain)
    if mapping is not None and (mapping.any_project or wanted in mapping.projects):
        return Verdict(allowed=True)
    why = (
        _unmapped(request.namespace) if mapping is None else "the mapping does not name it for this namespace"
    )
    return Verdict(
        allowed=False,
        message=f"project {request.project!r} in domain {request.domain!r} may not be used from namespace "
        f"{request.namespace}: {why}; use an Identity (spec.identityRef), or ask an operator to map the "
        "project to this namespace",
    )


@implements(IDENTITY_POLICY)
def identity_policy(request: IdentityRequest) -> IdentityPolicy:
    """The managed domain and roles of the namespace's Identities, or why it may have none."""
    config = current()
    mapping = config.namespaces.get(request.namespace) if config else None
    if config is None or mapping is None or mapping.domain is None:
        why = _unmapped(request.namespace) if mapping is None else "it maps no managed domain to it"
        return IdentityPolicy(
            allowed=False,
            message=f"Identities cannot be created in namespace {request.namespace}: {why}; an operator must "
            "map a managed Keystone domain to this namespace",
        )
    return IdentityPolicy(allowed=True, domain=mapping.domain, roles=list(config.roles))


@implements(PINNING_POLICY)
def pinning_policy(request: PinningRequest) -> PinningPolicy:
    """Whether the namespace's Servers may be pinned, and the operator's placement preflight for them."""
    config = current()
    mapping = config.namespaces.get(request.namespace) if config else None
    if mapping is None or mapping.pinning is None:
        why = _unmapped(request.namespace) if mapping is None else "the mapping does not allow pinning there"
        return PinningPolicy(
            allowed=False,
            message=f"spec.placement: servers of namespace {request.namespace} may not be pinned ({why}); "
            "remove spec.placement, or ask an operator to allow pinning (tenancy mapping `pinning`) — "
            "nothing was created",
        )
    pin = mapping.pinning
    return PinningPolicy(allowed=True, preflight=pin.placement_preflight, required_traits=pin.required_traits)


ACTIVITIES = [project_allowed, identity_policy, pinning_policy]
