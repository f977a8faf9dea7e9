"""The in-memory object store: one resourceVersion counter, create/update with apiserver semantics.

A write goes through: kind check → decode (admission.decode) → generic ObjectMeta rules → the kind's
strategy (prepare, validate) → managedFields → size limit → commit (event to the watch cache, owner index,
CRD registry). Deletion, propagation and garbage collection are in cascade.py.
"""

from __future__ import annotations

import copy
import uuid
from typing import Any

from . import fieldmanager
from .admission import check_kind, decode, validate
from .cascade import Cascades
from .errors import (
    STALE,
    ApiError,
    Cause,
    already_exists,
    bad_request,
    conflict,
    forbidden,
    invalid,
    not_found,
)
from .fieldpaths import FieldPathError
from .meta import SYSTEM_FIELDS, generate_suffix, now
from .options import WriteOptions
from .resources import CRD_KEY, ResourceType
from .validation import (
    ETCD_MAX_OBJECT_BYTES,
    encoded_size,
    validate_generate_name,
    validate_meta,
    validate_name,
)
from .watch import Event

DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public")


class Store(Cascades):
    def __init__(self, watch_window: int = 1000) -> None:
        super().__init__(watch_window)
        self.warnings: list[str] = []  # of the current request: unknown fields, finalizer names
        for name in DEFAULT_NAMESPACES:
            self.create(
                self.type_by_key("namespaces"),
                "",
                {"metadata": {"name": name}},
                WriteOptions(manager="kube-apiserver"),
            )

    # ---------------------------------------------------------------------------------------- reads
    def get(self, rtype: ResourceType, namespace: str, name: str) -> dict[str, Any]:
        obj = self.state(rtype).objects.get((namespace, name))
        if obj is None:
            raise not_found(rtype.group, rtype.plural, name)
        return obj

    # --------------------------------------------------------------------------------------- commit
    def _commit(
        self, rtype: ResourceType, event_type: str, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> None:
        state = self.state(rtype)
        meta = obj["metadata"]
        key = (meta.get("namespace", ""), meta["name"])
        if event_type == "DELETED":
            state.objects.pop(key, None)
        else:
            state.objects[key] = obj
        state.record(Event(int(meta["resourceVersion"]), event_type, obj, old, key[0]))
        emptied: set[str] = set()
        if state.rtype.key == CRD_KEY:
            emptied = self._crd_changed(event_type, obj)
        self._index_owners(state.rtype, key, obj, event_type)
        if event_type == "DELETED":
            self._after_delete(obj)
            if state.rtype.namespaced:
                emptied.add(key[0])
        for namespace in emptied:
            self._maybe_finish_namespace(namespace)

    # --------------------------------------------------------------------------------------- shared
    def _decode(self, rtype: ResourceType, version: str, body: Any, opts: WriteOptions) -> dict[str, Any]:
        """The request body as a storage-shaped object of the type (apiVersion/kind of the storage)."""
        body = check_kind(rtype, version, copy.deepcopy(body))
        decoded = decode(rtype, version, body, opts.strict_fields)
        self.warnings += decoded.warnings
        body = decoded.body
        if rtype.to_storage is not None:
            body = rtype.to_storage(body)
        storage = self.state(rtype).rtype
        body["apiVersion"] = storage.api_version(storage.storage_version)
        body["kind"] = storage.kind
        return body

    def _meta_causes(self, rtype: ResourceType, meta: dict[str, Any]) -> list[Cause]:
        causes, warnings = validate_meta(meta, rtype.strategy.strict_finalizers)
        self.warnings += warnings
        return causes

    def field_change(
        self, rtype: ResourceType, version: str, opts: WriteOptions, subresource: str
    ) -> fieldmanager.Change:
        storage = self.state(rtype).rtype
        vinfo = storage.version(storage.storage_version)
        return fieldmanager.Change(
            manager=opts.manager or "unknown",
            subresource=subresource,
            api_version=rtype.api_version(version),
            schema=fieldmanager.ssa_schema(storage, storage.storage_version),
            status_split=vinfo is not None and vinfo.status_subresource,
        )

    @staticmethod
    def _track(
        old: dict[str, Any] | None, new: dict[str, Any], base: Any, change: fieldmanager.Change
    ) -> list[dict[str, Any]]:
        try:
            return fieldmanager.track_update(old, new, base, change)
        except FieldPathError:
            return []  # like the apiserver's UpdateNoErrors: drop managedFields rather than fail the write

    def _set_managed(self, meta: dict[str, Any], managed: list[dict[str, Any]]) -> None:
        if managed:
            meta["managedFields"] = managed
        else:
            meta.pop("managedFields", None)

    @staticmethod
    def _check_size(rtype: ResourceType, obj: dict[str, Any]) -> None:
        if encoded_size(obj) > ETCD_MAX_OBJECT_BYTES:
            # What etcd answers for a value over its --max-request-bytes (1.5 MiB).
            raise ApiError(413, "RequestEntityTooLarge", "etcdserver: request is too large")

    # ------------------------------------------------------------------------------------- create
    def create(
        self,
        rtype: ResourceType,
        namespace: str,
        body: Any,
        opts: WriteOptions | None = None,
        version: str = "",
    ) -> dict[str, Any]:
        opts = opts or WriteOptions()
        version = version or rtype.storage_version
        body = self._decode(rtype, version, body, opts)
        meta = body["metadata"]
        if meta.get("resourceVersion"):
            raise bad_request("resourceVersion should not be set on objects to be created")
        causes: list[Cause] = []
        prefix = meta.get("generateName")
        if isinstance(prefix, str) and prefix:
            causes += validate_generate_name(prefix, rtype.strategy.name_rule)
            if not meta.get("name"):
                meta["name"] = f"{prefix}{generate_suffix()}"
        name = meta.get("name", "")
        if not name:
            required = Cause(
                "FieldValueRequired", "Required value: name or generateName is required", "metadata.name"
            )
            raise invalid(rtype.kind, rtype.group, "", [required])
        if rtype.namespaced:
            self._check_namespace(rtype, namespace, name, meta)
        else:
            meta.pop("namespace", None)
        causes += validate_name(name, rtype.strategy.name_rule) + self._meta_causes(rtype, meta)
        for system_field in (*SYSTEM_FIELDS, "selfLink"):
            meta.pop(system_field, None)
        vinfo = rtype.version(version)
        if vinfo is not None and vinfo.status_subresource and not rtype.builtin:
            body.pop("status", None)  # with the status subresource, create ignores .status
        rtype.strategy.default(body)
        if not opts.applied:
            # The creator owns what it sent and the scheme's defaults, not what the server sets next.
            given = meta.pop("managedFields", None)
            self._set_managed(
                meta, self._track(None, body, given, self.field_change(rtype, version, opts, ""))
            )
        rtype.strategy.prepare_create(body, self)
        causes += validate(rtype, version, body, None)
        if causes:
            raise invalid(rtype.kind, rtype.group, name, causes)
        if (meta.get("namespace", ""), name) in self.state(rtype).objects:
            raise already_exists(rtype.group, rtype.plural, name)
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = now()
        if rtype.strategy.generation:
            meta["generation"] = 1
        self._check_size(rtype, body)
        if opts.dry_run:
            meta["resourceVersion"] = ""
            return body
        meta["resourceVersion"] = str(self.next_rv())
        self._commit(rtype, "ADDED", body, None)
        return body

    def _check_namespace(self, rtype: ResourceType, namespace: str, name: str, meta: dict[str, Any]) -> None:
        if meta.get("namespace") and meta["namespace"] != namespace:
            raise bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        ns = self.types["namespaces"].objects.get(("", namespace))
        if ns is None:
            raise not_found("", "namespaces", namespace)
        if ns["metadata"].get("deletionTimestamp"):
            raise forbidden(
                rtype.group,
                rtype.plural,
                name,
                f"unable to create new content in namespace {namespace} because it is being terminated",
            )
        meta["namespace"] = namespace

    # ------------------------------------------------------------------------------------- update
    def update(
        self,
        rtype: ResourceType,
        namespace: str,
        name: str,
        body: Any,
        subresource: str = "",
        opts: WriteOptions | None = None,
        version: str = "",
    ) -> dict[str, Any]:
        opts = opts or WriteOptions()
        version = version or rtype.storage_version
        old = self.get(rtype, namespace, name)
        body = self._decode(rtype, version, body, opts)
        new_meta = body["metadata"]
        self._check_identity(rtype, namespace, name, new_meta, old)
        old_meta = old["metadata"]
        managed = new_meta.pop("managedFields", old_meta.get("managedFields"))
        vinfo = rtype.version(version)
        status_split = vinfo is not None and vinfo.status_subresource
        if subresource == "status":
            new = copy.deepcopy(old)
            if "status" in body:
                new["status"] = body["status"]
            else:
                new.pop("status", None)
        else:
            new = body
            for system_field in (*SYSTEM_FIELDS, "selfLink"):
                new_meta.pop(system_field, None)
                if system_field in old_meta:
                    new_meta[system_field] = old_meta[system_field]
            if rtype.namespaced:
                new_meta["namespace"] = namespace
            new_meta["name"] = name
            if status_split:
                if "status" in old:
                    new["status"] = copy.deepcopy(old["status"])
                else:
                    new.pop("status", None)
            rtype.strategy.default(new)
            rtype.strategy.prepare_update(new, old)
        causes = self._meta_causes(rtype, new["metadata"]) + self._finalizers_while_deleting(new, old)
        causes += validate(rtype, version, new, old)
        if causes:
            raise invalid(rtype.kind, rtype.group, name, causes)
        new_meta = new["metadata"]
        if rtype.strategy.generation and subresource != "status":
            strip = ("metadata", "status") if status_split else ("metadata",)
            if _without(old, strip) != _without(new, strip):
                new_meta["generation"] = int(old_meta.get("generation", 1)) + 1
        new_meta["resourceVersion"] = old_meta["resourceVersion"]
        if opts.applied:
            self._set_managed(new_meta, managed or [])
        else:
            new_meta.pop("managedFields", None)
            change = self.field_change(rtype, version, opts, subresource)
            self._set_managed(new_meta, self._track(old, new, managed, change))
        if new == old:
            return old  # a no-op write does not bump resourceVersion nor emit an event, like upstream
        self._check_size(rtype, new)
        if opts.dry_run:
            return new
        new_meta["resourceVersion"] = str(self.next_rv())
        if new_meta.get("deletionTimestamp") and not new_meta.get("finalizers"):
            self._commit(rtype, "DELETED", new, old)
        else:
            self._commit(rtype, "MODIFIED", new, old)
        return new

    @staticmethod
    def _check_identity(
        rtype: ResourceType, namespace: str, name: str, new_meta: dict[str, Any], old: dict[str, Any]
    ) -> None:
        """Name and namespace match the URL; resourceVersion and uid, when given, are preconditions."""
        if new_meta.get("name", name) != name:
            raise bad_request(
                f"the name of the object ({new_meta.get('name')}) does not match the name on the URL ({name})"
            )
        if rtype.namespaced and new_meta.get("namespace", namespace) != namespace:
            raise bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        old_meta = old["metadata"]
        given_rv = str(new_meta.get("resourceVersion") or "")
        if given_rv and given_rv != old_meta["resourceVersion"]:
            raise conflict(rtype.group, rtype.plural, name, STALE)
        if not given_rv and not rtype.builtin:
            cause = Cause(
                "FieldValueInvalid",
                "Invalid value: 0x0: must be specified for an update",
                "metadata.resourceVersion",
            )
            raise invalid(rtype.kind, rtype.group, name, [cause])
        if new_meta.get("uid") and new_meta["uid"] != old_meta["uid"]:
            raise conflict(
                rtype.group,
                rtype.plural,
                name,
                f"Precondition failed: UID in precondition: {new_meta['uid']}, UID in object meta: {old_meta['uid']}",
            )

    @staticmethod
    def _finalizers_while_deleting(new: dict[str, Any], old: dict[str, Any]) -> list[Cause]:
        old_meta = old["metadata"]
        if not old_meta.get("deletionTimestamp"):
            return []
        added = sorted(set(new["metadata"].get("finalizers") or []) - set(old_meta.get("finalizers") or []))
        if not added:
            return []
        found = ", ".join(f'"{f}"' for f in added)
        return [
            Cause(
                "FieldValueForbidden",
                "Forbidden: no new finalizers can be added if the object is being deleted, "
                f"found new finalizers []string{{{found}}}",
                "metadata.finalizers",
            )
        ]

    # -------------------------------------------------------------------------------------- CRDs
    def register_crd(self, crd: dict[str, Any]) -> dict[str, Any]:
        """Create or replace a CRD (used at start for --crds files)."""
        crd_type = self.type_by_key(CRD_KEY)
        name = (crd.get("metadata") or {}).get("name", "")
        existing = self.types[CRD_KEY].objects.get(("", name))
        opts = WriteOptions(manager="kube-emulator")
        if existing is None:
            return self.create(crd_type, "", crd, opts)
        body = copy.deepcopy(crd)
        body.setdefault("metadata", {})["resourceVersion"] = existing["metadata"]["resourceVersion"]
        return self.update(crd_type, "", name, body, opts=opts)


def _without(obj: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in keys and k not in ("apiVersion", "kind")}


__all__ = ["ApiError", "Store"]
