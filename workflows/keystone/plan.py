"""The Keystone kinds' plan walk (workflows/plan.py): what the objects a spec declares would be written now.

A Keystone resource never writes Keystone itself: each object it declares has one KeystoneObject workflow
(workflows/keystone/converge.py), and those converge independently. The walk applies that step's rules,
through the same pure functions (actuators: parents, lookup, identity and managed fields, drift; binding:
who may create), to fresh reads: each object's parents resolved by exact lookup, the object read, the
operator's policy for it. Then, per object:
  absent,  this spec may create it (managed, no import), not protected -> create (identity + managed fields)
  absent,  otherwise                                  -> none: it waits for someone outside osprov
  present, drift, writable (osprov created it, or the operator allows) -> update the drifted fields
  present, drift, not writable                        -> none: the drift is reported, never written
  a password                                          -> probed with its Secret at the step (never read here)
Whether osprov created an object comes from this resource's last answer for it; an object it never
answered for existed before osprov saw it ("found"). An object another resource declared first is written
by that declaration, as the object workflow decides; the plan shows this spec's view.
"""

from __future__ import annotations

from typing import Any, Protocol

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from osprov.api import keystone_io as io
    from osprov.api import ownership as own
    from osprov.api.ownership import Desired, ObjectKey
    from osprov.workflows.keystone import actuators as act
    from osprov.workflows.keystone import binding
    from osprov.workflows.plan import PlanStopped, Recorder


class KeystoneEntity(Protocol):
    """What the walk uses of a Keystone kind's workflow (workflows/keystone/common.py)."""

    @property
    def claim_state(self) -> Any: ...
    def claims(self, spec: Any) -> dict[str, tuple[ObjectKey, Desired]]: ...


READS = frozenset({io.FIND.name, io.CHECK_GRANT.name, own.POLICY.name})


class _Walk:
    def __init__(self, rec: Recorder) -> None:
        self.rec = rec
        self.ids: dict[str, str | None] = {}  # object path -> its Keystone ID (None: absent)
        self.notes: list[str] = []

    async def resolve(self, key: ObjectKey) -> str | None:
        """A parent's ID by its exact lookup (its own parents first)."""
        if key.path not in self.ids:
            ids = await self.parent_ids(key, None)
            found = None if ids is None else await self.find(key, ids)
            self.ids[key.path] = found[0].id if found else None
        return self.ids[key.path]

    async def parent_ids(self, key: ObjectKey, desired: Desired | None) -> dict[str, str] | None:
        ids = {}
        for field, parent in act.parents(key, desired).items():
            parent_id = await self.resolve(parent)
            if parent_id is None:
                self.notes.append(f"{key} waits for {parent}, which does not exist yet")
                return None
            ids[field] = parent_id
        return ids

    async def find(self, key: ObjectKey, ids: dict[str, str]) -> list[io.KeystoneObject]:
        found = await self.rec.read(io.FIND, act.lookup(key, ids), f"find {key}", local=True)
        if len(found) > 1:
            raise PlanStopped(f"{len(found)} Keystone objects match {key}: the step refuses to choose")
        return found

    async def object(self, key: ObjectKey, desired: Desired, bound: own.Binding, origin: Any) -> None:
        ids = await self.parent_ids(key, desired)
        if ids is None:
            return
        policy = await self.rec.read(own.POLICY, key, f"the operator's policy for {key}", local=True)
        if key.kind == "grant":
            grant = act.grant(key, ids)
            if not await self.rec.read(io.CHECK_GRANT, grant, f"check {key}", local=True):
                self._create(key, bound, policy, io.PUT_GRANT, f"grant {key}", grant)
            return
        found = await self.find(key, ids)
        if not found:
            wanted = act.identity_fields(key, ids) | act.managed(desired, ids)
            create = io.Create(kind=key.kind, fields=wanted, find=act.lookup(key, ids))
            self._create(key, bound, policy, io.CREATE, f"create {key}", create)
            return
        obj = found[0]
        drift = act.drift(dict(obj.fields), act.managed(desired, ids))
        writable = not policy.protected and (origin == "created" or policy.allowed)
        if drift and writable and not bound.observe:
            update = io.Update(kind=key.kind, id=obj.id, fields=drift)
            self.rec.write("update", io.UPDATE, f"update {key}: {', '.join(sorted(drift))}", update)
        elif drift:
            self.notes.append(f"{key}: {', '.join(sorted(drift))} differ, reported and never written here")
        if desired.password is not None and writable and not bound.observe:
            self.notes.append(
                f"{key}: its password is probed with its Secret and set if it no longer logs in"
            )

    def _create(
        self, key: ObjectKey, bound: own.Binding, policy: own.Policy, contract: Any, what: str, request: Any
    ) -> None:
        if policy.protected:
            self.notes.append(f"{key} does not exist, and it is protected: never created")
        elif not bound.creates:
            self.notes.append(f"{key} does not exist: it waits for someone outside osprov to create it")
        else:
            self.rec.write("create", contract, what, request)


async def walk(wf: KeystoneEntity, spec: Any, rec: Recorder) -> str:
    w, bound = _Walk(rec), binding.binding_of(spec)
    results = wf.claim_state.results
    for path, (key, desired) in wf.claims(spec).items():
        answer = results.get(path)
        await w.object(key, desired, bound, answer.origin if answer is not None else "found")
    if not rec.calls and not w.notes:
        return "converged: nothing to call"
    return "; ".join(w.notes) or "each object's workflow makes its calls (in parallel with the others)"
