"""Deletion, and what controllers do about it in a real cluster, done inline by the store.

- Finalizers hold an object (deletionTimestamp set) until the last one is removed.
- propagationPolicy (DeleteOptions, or the object's `orphan`/`foregroundDeletion` finalizer):
  Background (default) deletes the owner now and dependents whose owners are all gone after it;
  Orphan marks the owner with the `orphan` finalizer, removes its ownerReference from every dependent,
  then lets the owner go; Foreground marks the owner with `foregroundDeletion`, deletes its dependents
  and keeps the owner until no dependent with `blockOwnerDeletion: true` is left.
- Deleting a namespace marks it Terminating, deletes its content and removes it once empty.
Dry-run deletions compute the answer and change nothing.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from .errors import conflict
from .meta import now
from .options import DeleteOptions, WriteOptions
from .registry import Registry

if TYPE_CHECKING:
    from .resources import ResourceType

ORPHAN, FOREGROUND = "orphan", "foregroundDeletion"


class Cascades(Registry):
    if TYPE_CHECKING:

        def get(self, rtype: ResourceType, namespace: str, name: str) -> dict[str, Any]: ...

        def _commit(
            self, rtype: ResourceType, event_type: str, obj: dict[str, Any], old: dict[str, Any] | None
        ) -> None: ...

        def update(
            self,
            rtype: ResourceType,
            namespace: str,
            name: str,
            body: Any,
            subresource: str = "",
            opts: WriteOptions | None = None,
            version: str = "",
        ) -> dict[str, Any]: ...

    def delete(
        self, rtype: ResourceType, namespace: str, name: str, options: DeleteOptions | None = None
    ) -> tuple[dict[str, Any], bool]:
        """Returns (object, gone): gone is False when finalizers keep the object (deletionTimestamp set)."""
        options = options or DeleteOptions()
        old = self.get(rtype, namespace, name)
        self._check_preconditions(rtype, old, options.preconditions)
        if rtype.key == "namespaces":
            return self._delete_namespace(old, options.dry_run), False
        meta = old["metadata"]
        finalizers = list(meta.get("finalizers") or [])
        policy = options.propagation or (
            "Orphan" if ORPHAN in finalizers else "Foreground" if FOREGROUND in finalizers else "Background"
        )
        gc_finalizer = {"Orphan": ORPHAN, "Foreground": FOREGROUND}.get(policy)
        if gc_finalizer and gc_finalizer not in finalizers:
            finalizers = [f for f in finalizers if f not in (ORPHAN, FOREGROUND)] + [gc_finalizer]
        if not finalizers:
            if options.dry_run:
                return old, True
            gone = copy.deepcopy(old)
            gone["metadata"]["resourceVersion"] = str(self.next_rv())
            self._commit(rtype, "DELETED", gone, old)
            return gone, True
        if meta.get("deletionTimestamp") and finalizers == meta.get("finalizers"):
            return old, False
        marked = copy.deepcopy(old)
        marked_meta = marked["metadata"]
        marked_meta["finalizers"] = finalizers
        if not meta.get("deletionTimestamp"):
            marked_meta["deletionTimestamp"] = now()
            marked_meta["deletionGracePeriodSeconds"] = 0
            if "generation" in marked_meta:
                # Upstream markAsDeleting bumps the generation, so controllers keyed on it see the deletion.
                marked_meta["generation"] = int(marked_meta["generation"]) + 1
        if options.dry_run:
            return marked, False
        marked_meta["resourceVersion"] = str(self.next_rv())
        self._commit(rtype, "MODIFIED", marked, old)
        if gc_finalizer == ORPHAN:
            self._orphan_dependents(marked)
        elif gc_finalizer == FOREGROUND:
            self._delete_dependents_first(marked)
        return marked, False

    def _check_preconditions(self, rtype: ResourceType, old: dict[str, Any], pre: dict[str, Any]) -> None:
        meta = old["metadata"]
        if pre.get("uid") and pre["uid"] != meta["uid"]:
            raise conflict(
                rtype.group,
                rtype.plural,
                meta["name"],
                f"Precondition failed: UID in precondition: {pre['uid']}, UID in object meta: {meta['uid']}",
            )
        if pre.get("resourceVersion") and pre["resourceVersion"] != meta["resourceVersion"]:
            raise conflict(
                rtype.group,
                rtype.plural,
                meta["name"],
                f"Precondition failed: ResourceVersion in precondition: {pre['resourceVersion']}, "
                f"ResourceVersion in object meta: {meta['resourceVersion']}",
            )

    # ------------------------------------------------------------------------- garbage collection
    def _live_dependents(self, owner_uid: str) -> list[tuple[ResourceType, dict[str, Any]]]:
        found = []
        for type_key, ns, name in sorted(self.dependents.get(owner_uid, set())):
            state = self.types.get(type_key)
            obj = state.objects.get((ns, name)) if state is not None else None
            if state is not None and obj is not None:
                found.append((state.rtype, obj))
        return found

    def _remove_gc_finalizer(self, owner: dict[str, Any], finalizer: str) -> None:
        rtype = self.type_of(owner)
        if rtype is None:
            return
        meta = owner["metadata"]
        current = self.state(rtype).objects.get((meta.get("namespace", ""), meta["name"]))
        if current is None or finalizer not in (current["metadata"].get("finalizers") or []):
            return
        body = copy.deepcopy(current)
        body["metadata"]["finalizers"] = [f for f in body["metadata"]["finalizers"] if f != finalizer]
        self._gc_write(rtype, body)

    def _gc_write(self, rtype: ResourceType, body: dict[str, Any]) -> None:
        meta = body["metadata"]
        opts = WriteOptions(manager="garbage-collector")
        self.update(rtype, meta.get("namespace", ""), meta["name"], body, opts=opts)

    def _drop_owner(self, rtype: ResourceType, dependent: dict[str, Any], owner_uid: str) -> None:
        body = copy.deepcopy(dependent)
        refs = [r for r in body["metadata"].get("ownerReferences") or [] if r.get("uid") != owner_uid]
        if refs:
            body["metadata"]["ownerReferences"] = refs
        else:
            body["metadata"].pop("ownerReferences", None)
        self._gc_write(rtype, body)

    def _orphan_dependents(self, owner: dict[str, Any]) -> None:
        uid = owner["metadata"]["uid"]
        for rtype, dependent in self._live_dependents(uid):
            self._drop_owner(rtype, dependent, uid)
        self._remove_gc_finalizer(owner, ORPHAN)

    def _delete_dependents_first(self, owner: dict[str, Any]) -> None:
        uid = owner["metadata"]["uid"]
        for rtype, dependent in self._live_dependents(uid):
            meta = dependent["metadata"]
            if meta.get("deletionTimestamp"):
                continue
            if self._has_other_live_owner(dependent, uid):
                # A dependent with another owner stays; it only stops blocking this one.
                self._drop_owner(rtype, dependent, uid)
                continue
            policy = "Foreground" if self.dependents.get(meta["uid"]) else ""
            self.delete(rtype, meta.get("namespace", ""), meta["name"], DeleteOptions(propagation=policy))
        self._release_if_unblocked(uid)

    def _has_other_live_owner(self, obj: dict[str, Any], except_uid: str) -> bool:
        for ref in obj["metadata"].get("ownerReferences") or []:
            uid = ref.get("uid")
            if uid and uid != except_uid:
                owner = self.find_uid(uid)
                if owner is not None and not owner["metadata"].get("deletionTimestamp"):
                    return True
        return False

    def _release_if_unblocked(self, owner_uid: str) -> None:
        """A foreground deletion ends once no dependent with blockOwnerDeletion is left."""
        owner = self.find_uid(owner_uid)
        if owner is None or FOREGROUND not in (owner["metadata"].get("finalizers") or []):
            return
        for _, dependent in self._live_dependents(owner_uid):
            for ref in dependent["metadata"].get("ownerReferences") or []:
                if ref.get("uid") == owner_uid and ref.get("blockOwnerDeletion"):
                    return
        self._remove_gc_finalizer(owner, FOREGROUND)

    def _after_delete(self, gone: dict[str, Any]) -> None:
        """The garbage collector's reaction to an object that went away."""
        for ref in gone["metadata"].get("ownerReferences") or []:
            if isinstance(ref, dict) and ref.get("uid"):
                self._release_if_unblocked(str(ref["uid"]))
        self._collect_dependents(gone["metadata"]["uid"])

    def _collect_dependents(self, owner_uid: str) -> None:
        """Background deletion: delete dependents whose owners are all gone (finalizers honoured)."""
        for rtype, dependent in self._live_dependents(owner_uid):
            meta = dependent["metadata"]
            if meta.get("deletionTimestamp"):
                continue
            owners = [o.get("uid") for o in meta.get("ownerReferences") or [] if isinstance(o, dict)]
            if not any(uid and self.find_uid(uid) is not None for uid in owners):
                self.delete(rtype, meta.get("namespace", ""), meta["name"])

    # ------------------------------------------------------------------------------------ namespaces
    def _delete_namespace(self, ns: dict[str, Any], dry_run: bool) -> dict[str, Any]:
        name = ns["metadata"]["name"]
        if not ns["metadata"].get("deletionTimestamp"):
            new = copy.deepcopy(ns)
            new["metadata"]["deletionTimestamp"] = now()
            new["metadata"]["deletionGracePeriodSeconds"] = 0
            new["status"] = {"phase": "Terminating"}
            if dry_run:
                return new
            new["metadata"]["resourceVersion"] = str(self.next_rv())
            self._commit(self.types["namespaces"].rtype, "MODIFIED", new, ns)
            ns = new
        elif dry_run:
            return ns
        # The namespace controller's job, done inline: delete all content, then the namespace itself.
        for state in list(self.types.values()):
            if not state.rtype.namespaced:
                continue
            for (obj_ns, obj_name), obj in list(state.objects.items()):
                # An earlier deletion may have collected this object already.
                deleting = obj["metadata"].get("deletionTimestamp")
                if obj_ns == name and not deleting and (obj_ns, obj_name) in state.objects:
                    self.delete(state.rtype, obj_ns, obj_name)
        self._maybe_finish_namespace(name)
        return self.types["namespaces"].objects.get(("", name), ns)

    def _maybe_finish_namespace(self, name: str) -> None:
        ns_state = self.types["namespaces"]
        ns = ns_state.objects.get(("", name))
        if ns is None or not ns["metadata"].get("deletionTimestamp"):
            return
        for state in self.types.values():
            if state.rtype.namespaced and any(k[0] == name for k in state.objects):
                return
        final = copy.deepcopy(ns)
        final["spec"] = {}
        final["metadata"]["resourceVersion"] = str(self.next_rv())
        self._commit(ns_state.rtype, "DELETED", final, ns)
