"""Explicit binding of Keystone objects: managementPolicy (managed | unmanaged) and import (by ID or by the
declared identity), as pure functions the object workflow and the resources share.

The rows they add to the ownership table (docs/security.md):
  a managed claim, no import   -> create when missing; write what the ownership table allows (unchanged)
  a managed claim with import  -> never create (wait while missing); pinned to import.id when set (an ID
                                  that is not the declared object is an error); write only an object osprov
                                  created or the operator allow-lists — else `refused`: Ready=False,
                                  ImportNotAllowed, naming OSPROV_OWNERSHIP_ALLOW and the object's path
  an unmanaged claim           -> never create, never write, never delete: `observed` (Ready=True, Observed)
                                  with the drift from its spec; it never conflicts with anyone
The writer of an object is its first managed claimant (observers never write); creating needs a writer
that does not import.
"""

from __future__ import annotations

from osprov.api.common import CommonSpec
from osprov.api.ownership import Binding, Claim, ObjectKey, Policy

ALLOW_VARIABLE = "OSPROV_OWNERSHIP_ALLOW"


def binding_of(spec: CommonSpec) -> Binding:
    """A resource's binding from its spec (the Keystone kinds' `import` and the common managementPolicy)."""
    imported = getattr(spec, "import_", None)
    return Binding(
        imported=imported is not None,
        id=getattr(imported, "id", None),
        observe=spec.unmanaged,
    )


def writer(claims: list[Claim]) -> Claim | None:
    """The claim whose declaration is applied: the first that does not only observe."""
    return next((c for c in claims if not c.binding.observe), None)


def creator(claims: list[Claim]) -> Claim | None:
    """The writer, if it may also create the object when it is missing."""
    first = writer(claims)
    return first if first is not None and first.binding.creates else None


def pinned_id(claims: list[Claim]) -> str | None:
    """The ID an import pins the object to (the first claim that names one)."""
    return next((c.binding.id for c in claims if c.binding.id), None)


def waits_for_outside(claims: list[Claim]) -> bool:
    """Claimed, but nobody may create it: only someone outside osprov can (re-checked on a slow timer)."""
    return bool(claims) and creator(claims) is None


def missing(key: ObjectKey, claims: list[Claim]) -> tuple[str, str]:
    """(outcome, message) for an object that does not exist and that no claimant may create."""
    pinned = pinned_id(claims)
    if pinned is not None:
        return (
            "error",
            f"Keystone has no {key} with ID {pinned}: import.id must be the ID of the object the resource "
            "declares (its name, domain and type); fix import.id or the declared fields",
        )
    return (
        "waiting",
        f"{key} does not exist in Keystone: a resource that imports or only observes (managementPolicy "
        "unmanaged) never creates it — osprov continues as soon as it exists",
    )


def observed(key: ObjectKey, drift: list[str], extras: list[str]) -> str:
    tail = [*extras, *([f"differs from the spec: {', '.join(drift)}"] if drift else [])]
    text = f"observing existing {key} (managementPolicy unmanaged: osprov never writes or deletes it)"
    return text + (f" ({'; '.join(tail)})" if tail else "")


def refused(key: ObjectKey, policy: Policy) -> str:
    if policy.protected:
        return (
            f"{key} is protected ({policy.reason}): osprov never writes it, so it cannot be imported as "
            "managed; set managementPolicy: unmanaged to observe it"
        )
    return (
        f"{key} exists and osprov did not create it: an import with managementPolicy managed converges it "
        f"only when the operator's allow-list ({ALLOW_VARIABLE}) names {key.path}; ask the operator to add "
        "it, or set managementPolicy: unmanaged to only observe it"
    )
