"""The served resource types: built-ins, second views of built-ins, and the types CRDs define."""

from __future__ import annotations

from typing import Any

from .builtins import builtin_types, builtin_views
from .resources import CRD_KEY, ResourceType, type_from_crd
from .watch import TypeState


class Registry:
    def __init__(self, watch_window: int) -> None:
        self.rv = 0
        self.window = watch_window
        self.types: dict[str, TypeState] = {}  # storage: one per type that holds objects
        self.views: dict[str, ResourceType] = {}  # types served from another type's storage
        self.dependents: dict[str, set[tuple[str, str, str]]] = {}  # owner uid -> (type key, ns, name)
        self.owners_of: dict[tuple[str, str, str], set[str]] = {}  # the reverse index
        self.by_uid: dict[str, tuple[str, str, str]] = {}  # uid -> (type key, ns, name)
        for rtype in builtin_types():
            self.types[rtype.key] = TypeState(rtype, watch_window)
        for view in builtin_views():
            self.views[view.key] = view

    def find(self, group: str, version: str, plural: str) -> ResourceType | None:
        key = f"{plural}.{group}" if group else plural
        state = self.types.get(key)
        rtype = state.rtype if state is not None else self.views.get(key)
        if rtype is None or rtype.version(version) is None:
            return None
        return rtype

    def served_types(self) -> list[ResourceType]:
        return [s.rtype for s in self.types.values()] + list(self.views.values())

    def state(self, rtype: ResourceType) -> TypeState:
        return self.types[rtype.store_key]

    def type_by_key(self, key: str) -> ResourceType:
        return self.types[key].rtype

    def next_rv(self) -> int:
        self.rv += 1
        return self.rv

    def list_objects(self, rtype: ResourceType, namespace: str | None) -> list[dict[str, Any]]:
        objects = self.state(rtype).objects
        keys = sorted(k for k in objects if namespace is None or k[0] == namespace)
        return [objects[k] for k in keys]

    def _crd_changed(self, event_type: str, crd: dict[str, Any]) -> set[str]:
        """Serve, change or drop the type a CRD defines; returns the namespaces that lost objects."""
        rtype = type_from_crd(crd)
        if event_type == "DELETED":
            state = self.types.pop(rtype.key, None)
            if state is None:
                return set()
            state.cut_all()
            for key, obj in state.objects.items():
                self._index_owners(rtype, key, obj, "DELETED")
            return {k[0] for k in state.objects}
        state = self.types.get(rtype.key)
        if state is None:
            self.types[rtype.key] = TypeState(rtype, self.window, start_rv=self.rv)
        else:
            state.rtype = rtype
        return set()

    def find_uid(self, uid: str) -> dict[str, Any] | None:
        ref = self.by_uid.get(uid)
        state = self.types.get(ref[0]) if ref is not None else None
        return state.objects.get((ref[1], ref[2])) if state is not None and ref is not None else None

    def type_of(self, obj: dict[str, Any]) -> ResourceType | None:
        ref = self.by_uid.get(obj["metadata"]["uid"])
        state = self.types.get(ref[0]) if ref is not None else None
        return state.rtype if state is not None else None

    # ------------------------------------------------------------------------------- owner index
    def _index_owners(
        self, rtype: ResourceType, key: tuple[str, str], obj: dict[str, Any], event_type: str
    ) -> None:
        ref = (rtype.key, key[0], key[1])
        for uid in self.owners_of.pop(ref, set()):
            self.dependents.get(uid, set()).discard(ref)
        if event_type == "DELETED":
            self.by_uid.pop(obj["metadata"]["uid"], None)
        else:
            self.by_uid[obj["metadata"]["uid"]] = ref
            uids = {
                str(o["uid"])
                for o in obj["metadata"].get("ownerReferences") or []
                if isinstance(o, dict) and o.get("uid")
            }
            if uids:
                self.owners_of[ref] = uids
            for uid in uids:
                self.dependents.setdefault(uid, set()).add(ref)

    # ----------------------------------------------------------------------------------- snapshots
    def snapshot(self) -> dict[str, Any]:
        ordered = [CRD_KEY] + [k for k in self.types if k != CRD_KEY]
        objects = [{"type": k, "object": o} for k in ordered for o in self.types[k].objects.values()]
        return {"resourceVersion": self.rv, "objects": objects}

    def restore(self, data: dict[str, Any]) -> None:
        """Reload a snapshot; watches from before the restart get 410 (no event history survives)."""
        for state in self.types.values():
            state.objects.clear()
        for entry in data.get("objects", []):
            obj = entry["object"]
            if entry["type"] == CRD_KEY:
                self._crd_changed("ADDED", obj)
            target = self.types.get(entry["type"])
            if target is not None:
                meta = obj["metadata"]
                key = (meta.get("namespace", ""), meta["name"])
                target.objects[key] = obj
                self._index_owners(target.rtype, key, obj, "ADDED")
        self.rv = max(self.rv, int(data.get("resourceVersion", 0)))
        for state in self.types.values():
            state.events.clear()
            state.compacted_rv = self.rv
