"""Stack tests of kinds that act through an Identity: a managed tenant domain, and an osprov whose namespace the
operator's tenancy mapping gives that domain (plus whatever else a test's mapping needs)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openstack.connection
import yaml

from devenv.testing import StackEnv
from tests.support.osprov import Osprov, ensure_crd, run_osprov


def tenant_domain(admin: openstack.connection.Connection) -> Iterator[Any]:
    """A fresh Keystone domain for the Identities' projects and users; disabled and deleted afterwards."""
    ident: Any = admin.identity
    made = ident.create_domain(name=f"tenants-{uuid.uuid4().hex[:8]}", enabled=True)
    yield made
    ident.update_domain(made, enabled=False)
    ident.delete_domain(made, ignore_missing=True)


def tenant_osprov(
    stack: StackEnv,
    tmp: Path,
    domain: str,
    kinds: tuple[str, ...],
    *,
    namespace_policy: dict[str, Any] | None = None,
    policy: dict[str, Any] | None = None,
    **run: Any,
) -> Iterator[Osprov]:
    """Worker + bridge (run_osprov) whose namespace the mapping gives `domain`, with `namespace_policy` beside it
    and `policy` at the top level. The file is written before the namespace's name is known and re-written once
    it is (the worker re-reads it)."""
    for kind in kinds:
        ensure_crd(stack, kind)
    tenancy = tmp / "tenancy.yaml"
    tenancy.write_text(yaml.safe_dump({"namespaces": {}}))
    for o in run_osprov(stack, tmp, extra_env={"OSPROV_TENANCY_FILE": str(tenancy)}, **run):
        mapping = {
            "namespaces": {o.namespace: {"domain": domain, **(namespace_policy or {})}},
            **(policy or {}),
        }
        tenancy.write_text(yaml.safe_dump(mapping))
        yield o
