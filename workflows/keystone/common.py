"""What every Keystone kind shares: lookups by name, ensure-with-drift, delete by the stored ID.

Lookups are exact, filtered queries (activities post-filter); creates are create-if-absent, so a
retried create after a worker crash adopts what the first attempt made instead of duplicating it.
"""

from __future__ import annotations

from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from osprov.api import keystone_io as io
    from osprov.api.common import ReadyReason, StatusModel
    from osprov.api.messages import ConditionState
    from osprov.api.registry import READY
    from osprov.api.state import KeystoneState
    from osprov.workflows.calls import call
    from osprov.workflows.entity import Entity, KindT, Outcome, PassFailed, SpecT, StatusBase


async def find(kind: io.KeystoneKind, name: str | None = None, **filters: str) -> list[io.KeystoneObject]:
    where = ", ".join(f"{k}={v}" for k, v in (({"name": name} if name else {}) | filters).items())
    return await call(
        io.FIND,
        io.Find(kind=kind, name=name, filters=filters),
        summary=f"find {kind} {where}",
    )


async def require(kind: io.KeystoneKind, label: str, name: str, **filters: str) -> io.KeystoneObject:
    """The object a resource depends on; missing = a clear, retried failure (dependencies by retry)."""
    found = await find(kind, name, **filters)
    if not found:
        raise PassFailed(
            f"{label} does not exist in Keystone yet; create it (for example with a "
            f"{kind.capitalize()} resource) — retrying"
        )
    return found[0]


async def domain_id(name: str) -> str:
    return (await require("domain", f"domain {name!r}", name)).id


async def ensure(
    kind: io.KeystoneKind, lookup: io.Find, create: dict[str, Any], manage: dict[str, Any]
) -> tuple[io.KeystoneObject, str, list[io.KeystoneObject]]:
    """Find exactly, create when missing, PATCH only the managed fields that drifted.

    Returns the object, what was done ("created" | "updated" | "unchanged"), and any other exact
    matches (duplicates; lowest ID is adopted, the others are reported, never deleted)."""
    found = await call(io.FIND, lookup, summary=f"find {kind} {lookup.name or ''}")
    if not found:
        obj = await call(
            io.CREATE,
            io.Create(kind=kind, fields=create | manage, find=lookup),
            summary=f"create {kind} {lookup.name or ''}",
        )
        return obj, "created", []
    obj, dupes = found[0], found[1:]
    drift = {k: v for k, v in manage.items() if v is not None and obj.fields.get(k) != v}
    if drift:
        obj = await call(
            io.UPDATE,
            io.Update(kind=kind, id=obj.id, fields=drift),
            summary=f"update {kind} {obj.id}: {', '.join(sorted(drift))}",
        )
        return obj, "updated", dupes
    return obj, "unchanged", dupes


def ready(message: str) -> list[ConditionState]:
    return [ConditionState.of(READY, True, ReadyReason.RECONCILED, message)]


class KeystoneEntity(Entity[SpecT, KindT]):
    """Base of the Keystone kinds."""

    KEYSTONE_KIND: io.KeystoneKind


class KeystoneObjectEntity(KeystoneEntity[SpecT, KeystoneState]):
    """A kind that resolves to one Keystone object (its ID in state and in status): delete by that ID."""

    STATE = KeystoneState

    def status(self, base: StatusBase) -> StatusModel:
        field = self.info.id_attribute
        return self.info.status_model(**base, **({field: self.k.id} if field else {}))

    async def finalize(self, spec: SpecT) -> None:
        # Delete by the ID this workflow recorded, never by a query: a same-named object made by
        # someone else is not ours to remove. Already gone counts as deleted.
        stored = self.k.id
        if stored:
            await call(
                io.DELETE,
                io.Delete(kind=self.KEYSTONE_KIND, id=stored),
                summary=f"delete {self.KEYSTONE_KIND} {stored}",
            )

    def converged(
        self, obj: io.KeystoneObject, done: str, what: str, dupes: list[io.KeystoneObject] | None = None
    ) -> Outcome:
        message = f"{done} {what}" if done != "unchanged" else f"{what} is up to date"
        if dupes:
            message += f"; duplicates not adopted: {', '.join(d.id for d in dupes)}"
        self.k.id = obj.id
        return Outcome(conditions=ready(message))
