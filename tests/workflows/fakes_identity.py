"""An in-memory tenancy mapping, Identity objects and application credentials for time-skipping tests,
registered under the real activity names (FakeCloud.activities() includes them).

The mapping gives namespace "ns" the managed domain "tenants" and allows every spec.project, unless a test
refuses some (`refused_projects`) or takes the domain away (`domain = None`).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from temporalio import activity

from osprov.api import identity_io as io
from osprov.api import tenancy_io

ROLES = ["member", "load-balancer_member"]


@dataclass
class FakeIdentities:
    domain: str | None = "tenants"
    roles: list[str] = field(default_factory=lambda: list(ROLES))
    refused_projects: set[tuple[str, str, str]] = field(default_factory=set)  # (namespace, project, domain)
    # What the operator's `pinning` says for every namespace (default: pinning is not allowed).
    pinning: tenancy_io.PinningPolicy = field(
        default_factory=lambda: tenancy_io.PinningPolicy(allowed=False, message="may not be pinned")
    )
    identities: dict[tuple[str, str], str] = field(default_factory=dict)  # (namespace, name) -> uid
    resources: dict[tuple[str, str], str] = field(default_factory=dict)  # (kind, name) -> uid (users alive)
    secrets: dict[str, str] = field(default_factory=dict)  # Secret name -> credential ID it holds
    issued: dict[str, io.IssueCredential] = field(default_factory=dict)  # credential ID -> request
    revoked: list[str] = field(default_factory=list)
    keypairs_deleted: list[tuple[str, str]] = field(default_factory=list)  # (Identity uid, credential ID)
    calls: list[str] = field(default_factory=list)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _versions: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def count(self, name: str) -> int:
        return sum(1 for c in self.calls if c == name)

    @property
    def live(self) -> list[str]:
        """Credential IDs issued and not revoked."""
        return [c for c in self.issued if c not in self.revoked]

    def activities(self) -> list[Any]:
        fake = self

        @activity.defn(name=tenancy_io.PROJECT_ALLOWED.name)
        async def project_allowed(req: tenancy_io.ProjectRequest) -> tenancy_io.Verdict:
            fake.calls.append(tenancy_io.PROJECT_ALLOWED.name)
            if (req.namespace, req.project, req.domain) in fake.refused_projects:
                return tenancy_io.Verdict(allowed=False, message=f"project {req.project!r} is not mapped")
            return tenancy_io.Verdict(allowed=True)

        @activity.defn(name=tenancy_io.PINNING_POLICY.name)
        async def pinning_policy(req: tenancy_io.PinningRequest) -> tenancy_io.PinningPolicy:
            fake.calls.append(tenancy_io.PINNING_POLICY.name)
            return fake.pinning

        @activity.defn(name=tenancy_io.IDENTITY_POLICY.name)
        async def identity_policy(req: tenancy_io.IdentityRequest) -> tenancy_io.IdentityPolicy:
            fake.calls.append(tenancy_io.IDENTITY_POLICY.name)
            if fake.domain is None:
                return tenancy_io.IdentityPolicy(
                    allowed=False, message=f"namespace {req.namespace} is not mapped"
                )
            return tenancy_io.IdentityPolicy(allowed=True, domain=fake.domain, roles=fake.roles)

        @activity.defn(name=io.FIND_IDENTITY.name)
        async def find_identity(req: io.FindIdentity) -> io.IdentityFound:
            fake.calls.append(io.FIND_IDENTITY.name)
            uid = fake.identities.get((req.namespace, req.name))
            return io.IdentityFound(exists=uid is not None, uid=uid)

        @activity.defn(name=io.LIVING_USERS.name)
        async def living_users(req: io.CheckUsers) -> list[io.IdentityUser]:
            fake.calls.append(io.LIVING_USERS.name)
            return [u for u in req.users if fake.resources.get((u.kind, u.name)) == u.uid]

        @activity.defn(name=io.CHECK_SECRET.name)
        async def check_secret(req: io.CheckSecret) -> io.SecretCheck:
            fake.calls.append(io.CHECK_SECRET.name)
            holds = fake.secrets.get(req.secret.name) == req.credential_id
            return io.SecretCheck(holds=holds, version="1" if holds else None)

        @activity.defn(name=io.ISSUE_CREDENTIAL.name)
        async def issue_credential(req: io.IssueCredential) -> io.IssuedCredential:
            fake.calls.append(io.ISSUE_CREDENTIAL.name)
            cid = f"ac-{next(fake._ids)}"
            fake.issued[cid] = req
            fake.secrets[req.secret.name] = cid
            return io.IssuedCredential(
                id=cid, name=req.name, expires_at=req.expires_at, secret_version=str(next(fake._versions))
            )

        @activity.defn(name=io.REVOKE_CREDENTIAL.name)
        async def revoke_credential(req: io.RevokeCredential) -> bool:
            fake.calls.append(io.REVOKE_CREDENTIAL.name)
            fake.revoked.append(req.credential_id)
            return True

        @activity.defn(name=io.DELETE_KEYPAIR.name)
        async def delete_keypair(req: io.DeleteKeypair) -> bool:
            fake.calls.append(io.DELETE_KEYPAIR.name)
            live = [c for c in fake.live if fake.secrets.get(req.credential.secret) == c]
            assert live, "the keypair is deleted with a credential that still works"  # X6 before X3
            fake.keypairs_deleted.append((req.identity_uid, live[0]))
            return True

        return [
            delete_keypair,
            project_allowed,
            pinning_policy,
            identity_policy,
            find_identity,
            living_users,
            check_secret,
            issue_credential,
            revoke_credential,
        ]
