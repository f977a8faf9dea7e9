"""What controllers do in a real cluster, done inline by the store: namespace deletion (content first,
then the namespace) and background garbage collection of dependents via ownerReferences."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from .meta import now
from .options import WriteOptions
from .watch import TypeState

if TYPE_CHECKING:
    from .resources import ResourceType


class Cascades:
    types: dict[str, TypeState]
    dependents: dict[str, set[tuple[str, str, str]]]  # owner uid -> (type key, ns, name)
    owners_of: dict[tuple[str, str, str], set[str]]  # the reverse index

    if TYPE_CHECKING:

        def next_rv(self) -> int: ...

        def _commit(
            self, rtype: ResourceType, event_type: str, obj: dict[str, Any], old: dict[str, Any] | None
        ) -> None: ...

        def delete(
            self,
            rtype: ResourceType,
            namespace: str,
            name: str,
            preconditions: dict[str, Any] | None = None,
            opts: WriteOptions | None = None,
        ) -> tuple[dict[str, Any], bool]: ...

    # ------------------------------------------------------------------------- garbage collection
    def _index_owners(
        self, rtype: ResourceType, key: tuple[str, str], obj: dict[str, Any], event_type: str
    ) -> None:
        ref = (rtype.key, key[0], key[1])
        for uid in self.owners_of.pop(ref, set()):
            self.dependents.get(uid, set()).discard(ref)
        if event_type != "DELETED":
            uids = {
                str(o["uid"])
                for o in obj["metadata"].get("ownerReferences") or []
                if isinstance(o, dict) and o.get("uid")
            }
            if uids:
                self.owners_of[ref] = uids
            for uid in uids:
                self.dependents.setdefault(uid, set()).add(ref)

    def _collect_dependents(self, owner_uid: str) -> None:
        """Background cascading deletion (the garbage collector's job, done inline): delete dependents whose
        owners are all gone. Finalizers on dependents are honoured like any delete."""
        live_uids = None
        for type_key, ns, name in sorted(self.dependents.pop(owner_uid, set())):
            state = self.types.get(type_key)
            obj = state.objects.get((ns, name)) if state is not None else None
            if state is None or obj is None or obj["metadata"].get("deletionTimestamp"):
                continue
            if live_uids is None:
                live_uids = {o["metadata"]["uid"] for st in self.types.values() for o in st.objects.values()}
            owners = [
                o.get("uid") for o in obj["metadata"].get("ownerReferences") or [] if isinstance(o, dict)
            ]
            if not any(uid in live_uids for uid in owners):
                self.delete(state.rtype, ns, name)

    # ------------------------------------------------------------------------------------ namespaces
    def _delete_namespace(self, ns: dict[str, Any], opts: WriteOptions) -> dict[str, Any]:
        name = ns["metadata"]["name"]
        if opts.dry_run:
            return ns
        if not ns["metadata"].get("deletionTimestamp"):
            new = copy.deepcopy(ns)
            new["metadata"]["deletionTimestamp"] = now()
            new["metadata"]["deletionGracePeriodSeconds"] = 0
            new["status"] = {"phase": "Terminating"}
            new["metadata"]["resourceVersion"] = str(self.next_rv())
            self._commit(self.types["namespaces"].rtype, "MODIFIED", new, ns)
            ns = new
        # The namespace controller's job, done inline: delete all content, then the namespace itself.
        for state in list(self.types.values()):
            if not state.rtype.namespaced:
                continue
            for (obj_ns, obj_name), obj in list(state.objects.items()):
                if obj_ns == name and not obj["metadata"].get("deletionTimestamp"):
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
