"""One step of a KeystoneObject workflow: observe the object, create it when claimed and absent, write what
the ownership table allows, and decide each claimant's answer (see workflows/keystone/objects.py).

Reads and creates run as local activities (short, idempotent: create is create-if-absent); deletes,
revocations and password writes are ordinary activities, so the intent is in history before the call.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from osprov.api import keystone_io as io
    from osprov.api import ownership as own
    from osprov.api.errors import INVALID, NOT_FOUND
    from osprov.api.ownership import Claim, ObjectResult, ObjectState
    from osprov.workflows import patches
    from osprov.workflows.calls import call, call_local, together
    from osprov.workflows.entity import ACTIVITY_FAILED, error_type
    from osprov.workflows.keystone import actuators as act
    from osprov.workflows.keystone import binding


# The object's own lookup goes in one round of local activities with the operator's policy (when the step
# must read it: objects.py) and, for a new endpoint, its region. In turn, each round was an activation of
# its own (~50-100 ms on a busy worker) on every new object's way to its create.
PATCH_READS_TOGETHER = "keystone-step-reads-together"
PolicyRead = Callable[[], Awaitable[own.Policy]]


def _region(region: str) -> io.Find:
    return io.Find(kind="region", name=region)


class Converger:
    def __init__(
        self, s: ObjectState, full: bool, on_created: Callable[[], Awaitable[None]] | None = None
    ) -> None:
        self.s = s
        self.full = full
        self.on_created = on_created  # told the object's ID before its password is set (objects.py)
        self.id_changed = False
        self.parents_stale = False
        self.done = "unchanged"  # created | updated | unchanged
        self.password = ""
        self.duplicates: list[str] = []
        self.drift: list[str] = []
        self.current: dict[str, Any] = {}  # the object's fields as observed this step
        self.region_found: bool | None = None  # a new endpoint's region, read beside its lookup

    @property
    def key(self) -> own.ObjectKey:
        return self.s.key

    @property
    def writable(self) -> bool:
        """May osprov write this object? Never when protected; else when it made it or the operator allows."""
        policy = self.s.policy or own.Policy()
        return not policy.protected and (self.s.origin == "created" or policy.allowed)

    async def run(self, read_policy: PolicyRead | None = None) -> dict[str, ObjectResult]:
        """`read_policy`: the operator's policy is due this step; it is read beside the object's lookup."""
        s = self.s
        primary = binding.writer(s.claims)  # observers never write (workflows/keystone/binding.py)
        current = await self._first_reads(read_policy)
        if current is None and s.claims:
            maker = binding.creator(s.claims)
            if maker is None:  # everyone imports or observes: only someone outside osprov can create it
                outcome, message = binding.missing(self.key, s.claims)
                return self._all(outcome, message)  # type: ignore[arg-type]
            if s.policy is not None and s.policy.protected:
                return self._all(
                    "error", f"{self.key} does not exist, and it is protected: osprov never creates it"
                )
            current = await self._create(maker)
        if current is None:
            return {}
        self.current = current
        if primary is not None:
            await self._converge(primary, current)
        return {c.claimant.workflow_id: self._answer(c, primary) for c in s.claims}

    # ----- observe and create ---------------------------------------------------------------------
    async def _first_reads(self, read_policy: PolicyRead | None) -> dict[str, Any] | None:
        """The object's own lookup, and beside it in one round of local activities the policy (when due)
        and a new endpoint's region. In turn, each was an activation of its own before the create."""
        side: list[Awaitable[None]] = []
        if read_policy is not None:
            side.append(self._take_policy(read_policy))
        if self._region_beside():
            side.append(self._take_region())
        if not side:
            return await self._observe()
        first = await together(self._observe(), *side)
        current: dict[str, Any] | None = first[0]
        return current

    async def _take_policy(self, read_policy: PolicyRead) -> None:
        self.s.policy = await read_policy()

    async def _take_region(self) -> None:
        self.region_found = await self._find_region()

    async def _observe(self) -> dict[str, Any] | None:
        """The object's fields in Keystone now (None: absent); records the origin at the first sight."""
        s = self.s
        if self.key.kind == "grant":
            grant = act.grant(self.key, s.parent_ids)
            exists = await call_local(io.CHECK_GRANT, grant, summary=f"check {self.key}")
            found: dict[str, Any] | None = {} if exists else None
            self._seen(found is not None, None)
            return found
        lookup = act.lookup(self.key, s.parent_ids)
        pinned = binding.pinned_id(s.claims)  # an import by ID: that object or none
        known = pinned or s.id
        if known:
            by_id = await call_local(
                io.FIND,
                io.Find(kind=lookup.kind, filters={"id": known}),
                summary=f"read {self.key} ({known})",
            )
            matches = [
                o
                for o in by_id
                if all(o.fields.get(k) == v for k, v in lookup.filters.items())
                and (not pinned or lookup.name is None or o.fields.get("name") == lookup.name)
            ]
        else:
            matches = []
        if not matches and not pinned:
            matches = await call_local(io.FIND, lookup, summary=f"find {self.key}")
        self.duplicates = [o.id for o in matches[1:]]
        obj = matches[0] if matches else None
        self._seen(obj is not None, obj.id if obj else None)
        return dict(obj.fields) if obj else None

    def _seen(self, present: bool, object_id: str | None) -> None:
        s = self.s
        if s.origin is None and present:
            s.origin = "found"  # it existed before any claim: never ours to rewrite or delete
        if present != s.present or object_id != s.id:
            self.id_changed = True
        s.present, s.id = present, object_id if present else None

    async def _create(self, primary: Claim) -> dict[str, Any] | None:
        """Regular activities, not local ones: the intent to create is in history before the POST, so a
        worker killed after the POST retries the create-if-absent, which returns what the first attempt
        made, and the origin stays "created" (a local create lost with its workflow task would be replayed
        as a lookup that finds the object, and osprov's own object would count as "found")."""
        s = self.s
        try:
            if self.key.kind == "grant":
                await call(io.PUT_GRANT, act.grant(self.key, s.parent_ids), summary=f"grant {self.key}")
                fields: dict[str, Any] = {}
                object_id = None
            else:
                if self.key.kind == "endpoint":
                    await self._ensure_region()
                lookup = act.lookup(self.key, s.parent_ids)
                wanted = act.identity_fields(self.key, s.parent_ids) | act.managed(
                    primary.desired, s.parent_ids
                )
                obj = await call(
                    io.CREATE,
                    io.Create(kind=lookup.kind, fields=wanted, find=lookup, absent=True),  # _observe
                    summary=f"create {self.key}",
                )
                fields, object_id = dict(obj.fields), obj.id
        except ACTIVITY_FAILED as err:
            if error_type(err) in (NOT_FOUND, INVALID):
                self.parents_stale = True  # e.g. a parent deleted outside osprov: resolve the parents again
            raise
        # Made now, by osprov, for this claimant (also when an object that existed before was deleted since).
        s.origin, s.created_for = "created", primary.claimant.resource
        self._seen(True, object_id)
        self.done = "created"
        if primary.desired.password is not None:
            if self.on_created is not None:  # its dependents (grants) need its ID, not its password
                await self.on_created()
            await self._set_password(primary)
            self.password = "password set"
        return fields

    def _region_beside(self) -> bool:
        """Whether this step reads the endpoint's region beside the endpoint's own lookup: a new endpoint
        that a claimant may create (the region is read only on the way to a create, as before)."""
        s = self.s
        return (
            self.key.kind == "endpoint"
            and not s.present
            and binding.creator(s.claims) is not None
            and not (s.policy is not None and s.policy.protected)
            and patches.patched(PATCH_READS_TOGETHER)
        )

    async def _find_region(self) -> bool:
        region = self.key.region
        assert region is not None
        found = await call_local(io.FIND, _region(region), summary=f"find region {region}")
        return bool(found)

    async def _ensure_region(self) -> None:
        """A region is keyed by its ID, so Keystone refuses a twin (409) and the create adopts the racer's
        region (the sibling endpoints of a new region race this way). After this step's own read missed
        it, the create POSTs without looking again (`absent`), as a unique-name object's create does."""
        region = self.key.region
        assert region is not None
        find = _region(region)
        found = self.region_found
        if found is None:
            found = await self._find_region()
        if not found:
            await call_local(
                io.CREATE,
                io.Create(kind="region", fields={"id": region}, find=find, absent=True),
                summary=f"create region {region}",
            )

    # ----- writes the ownership table allows --------------------------------------------------------
    async def _converge(self, primary: Claim, current: dict[str, Any]) -> None:
        s = self.s
        wanted = act.managed(primary.desired, s.parent_ids)
        drift = act.drift(current, wanted) if self.key.kind != "grant" else {}
        self.drift = sorted(drift)
        if drift and self.writable and self.done != "created":
            assert s.id is not None
            updated = await call_local(
                io.UPDATE,
                io.Update(kind=self.key.kind, id=s.id, fields=drift),
                summary=f"update {self.key}: {', '.join(sorted(drift))}",
            )
            self.current = dict(updated.fields)  # what the sweep compares with from now on
            self.done, self.drift = "updated", []
        if primary.desired.password is not None and self.done != "created":
            await self._password(primary)

    async def _password(self, primary: Claim) -> None:
        s = self.s
        if not self.writable:
            self.password = "password not managed: osprov did not create this user"
            return
        if s.password_version == primary.desired.password_version and not self.full:
            self.password = "password unchanged"
            return
        assert s.id is not None and primary.desired.password is not None
        probe = await call(
            io.PROBE_PASSWORD,
            io.Probe(
                user_id=s.id,
                user_name=self.key.name,
                domain_id=s.parent_ids.get("domain_id", ""),
                secret=primary.desired.password,
            ),
            summary=f"probe the password of {self.key}",
        )
        if probe.outcome == "unauthorized":
            await self._set_password(primary)
            self.password = "password updated"
        else:
            s.password_version = primary.desired.password_version
            self.password = "password verified"

    async def _set_password(self, primary: Claim) -> None:
        s = self.s
        assert s.id is not None and primary.desired.password is not None
        secret = primary.desired.password
        await call(
            io.SET_PASSWORD,
            io.SetPassword(user_id=s.id, secret=secret),
            summary=f"set the password of {self.key} from Secret {secret.namespace}/{secret.name}",
        )
        s.password_version = primary.desired.password_version

    async def delete(self) -> None:
        """Delete the object osprov created (the last claimant asked for it): by ID, never by query."""
        s = self.s
        if self.key.kind == "grant":
            await call(io.REVOKE_GRANT, act.grant(self.key, s.parent_ids), summary=f"revoke {self.key}")
        elif s.id:
            if self.key.kind == "domain":  # Keystone refuses to delete an enabled domain
                await call(
                    io.UPDATE,
                    io.Update(kind="domain", id=s.id, fields={"enabled": False}),
                    summary=f"disable {self.key} before deleting it",
                )
            await call(io.DELETE, io.Delete(kind=self.key.kind, id=s.id), summary=f"delete {self.key}")
        s.present, s.id = False, None

    # ----- answers -------------------------------------------------------------------------------
    def _all(self, outcome: own.Outcome, message: str) -> dict[str, ObjectResult]:
        return {c.claimant.workflow_id: self._make(c, outcome, message) for c in self.s.claims}

    def _make(self, claim: Claim, outcome: own.Outcome, message: str, action: Any = None) -> ObjectResult:
        s = self.s
        return ObjectResult(
            key=s.key,
            seq=claim.seq,
            outcome=outcome,
            message=message,
            id=s.id,
            origin=s.origin,
            action=action,
        )

    def _answer(self, claim: Claim, primary: Claim | None) -> ObjectResult:
        s = self.s
        if claim.binding.observe or primary is None:
            drift = (
                []
                if self.key.kind == "grant"
                else sorted(act.drift(self.current, act.managed(claim.desired, s.parent_ids)))
            )
            extras = [f"duplicates not adopted: {', '.join(self.duplicates)}"] if self.duplicates else []
            return self._make(claim, "observed", binding.observed(s.key, drift, extras))
        if claim is not primary:
            fields = act.disagreement(primary.desired, claim.desired)
            if fields:
                return self._make(
                    claim,
                    "conflict",
                    f"{primary.claimant.resource} already declares {s.key} with a different {', '.join(fields)}; "
                    "osprov applies the first declaration and writes nothing for this one",
                )
        policy = s.policy or own.Policy()
        if claim.binding.imported and not self.writable:
            return self._make(claim, "refused", binding.refused(s.key, policy))
        extras = [x for x in (self.password,) if x]
        if self.duplicates:
            extras.append(f"duplicates not adopted: {', '.join(self.duplicates)}")
        if self.drift:
            extras.append(f"differs from the spec: {', '.join(self.drift)}")
        tail = f" ({'; '.join(extras)})" if extras else ""
        if policy.protected:
            return self._make(
                claim, "adopted", f"{s.key} is protected ({policy.reason}): osprov never changes it{tail}"
            )
        if not self.writable:
            return self._make(
                claim,
                "adopted",
                f"adopted existing {s.key}: osprov did not create it, so it only reads it (an operator can "
                f"allow-list it){tail}",
            )
        what = {"created": f"created {s.key}", "updated": f"updated {s.key}"}.get(
            self.done, f"{s.key} is up to date"
        )
        action = self.done if self.done != "unchanged" and claim is primary else None
        return self._make(claim, "ready", what + tail, action)
