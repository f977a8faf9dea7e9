"""Events: core/v1 Event and events.k8s.io/v1 Event are two views of one store, as in kube-apiserver.

Objects are stored in the core/v1 shape; the events.k8s.io/v1 view renames fields on the way in and out
(pkg/apis/events/v1/conversion.go) and its field selectors are translated to the core labels
(`regarding.name` → `involvedObject.name`, `reportingController` → `reportingComponent`). Validation
follows pkg/apis/core/validation (ValidateEventCreate): lenient for core/v1 requests, strict for
events.k8s.io/v1 ones.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .errors import Cause
from .meta import age
from .strategy import Strategy
from .typed import parse_time

# events.k8s.io/v1 field -> core/v1 field
V1_TO_CORE = {
    "regarding": "involvedObject",
    "note": "message",
    "deprecatedSource": "source",
    "deprecatedFirstTimestamp": "firstTimestamp",
    "deprecatedLastTimestamp": "lastTimestamp",
    "deprecatedCount": "count",
    "reportingController": "reportingComponent",
}
CORE_TO_V1 = {core: v1 for v1, core in V1_TO_CORE.items()}
_OBJECT_REF = ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")


def to_core(body: dict[str, Any]) -> dict[str, Any]:
    return {V1_TO_CORE.get(k, k): v for k, v in body.items() if k not in CORE_TO_V1}


def from_core(obj: dict[str, Any], api_version: str) -> dict[str, Any]:
    out = {CORE_TO_V1.get(k, k): v for k, v in obj.items() if k not in V1_TO_CORE}
    out["apiVersion"] = api_version
    # eventTime is a required, non-omitempty MicroTime: Go encodes the zero value of an old-style Event
    # (created through core/v1 without it) as null.
    out.setdefault("eventTime", None)
    return out


def _path(*segments: str) -> Callable[[dict[str, Any]], str]:
    def get(obj: dict[str, Any]) -> str:
        node: Any = obj
        for seg in segments:
            node = node.get(seg) if isinstance(node, dict) else None
        return "" if node is None else str(node)

    return get


def _source(obj: dict[str, Any]) -> str:
    return _path("source", "component")(obj) or str(obj.get("reportingComponent") or "")


# Field selectors, evaluated on the stored (core) object (pkg/registry/core/event/strategy.go).
CORE_FIELDS: dict[str, Callable[[dict[str, Any]], str]] = {
    **{f"involvedObject.{f}": _path("involvedObject", f) for f in _OBJECT_REF},
    "reason": _path("reason"),
    "reportingComponent": _path("reportingComponent"),
    "source": _source,
    "type": _path("type"),
}
V1_FIELDS: dict[str, Callable[[dict[str, Any]], str]] = {
    **{f"regarding.{f}": _path("involvedObject", f) for f in _OBJECT_REF},
    "reason": _path("reason"),
    "reportingController": _path("reportingComponent"),
    "source": _source,
    "type": _path("type"),
}


def _required(field: str) -> Cause:
    return Cause("FieldValueRequired", "Required value", field)


def _too_long(field: str, limit: int) -> Cause:
    return Cause("FieldValueInvalid", f'Invalid value: "": can have at most {limit} characters', field)


class CoreEventStrategy(Strategy):
    """core/v1 Events: only ValidateEventCreate's legacy rules (and any path-segment name)."""

    name_rule = "path"
    strict_finalizers = False
    controller_field = "reportingComponent"

    def validate(self, body: dict[str, Any], old: dict[str, Any] | None) -> list[Cause]:
        if old is not None:
            return []
        return self.legacy_rules(body)

    def legacy_rules(self, body: dict[str, Any]) -> list[Cause]:
        causes: list[Cause] = []
        namespace = body["metadata"].get("namespace", "")
        involved = body.get("involvedObject") or {}
        involved_ns = involved.get("namespace") or ""
        mismatch = Cause(
            "FieldValueInvalid",
            f'Invalid value: "{involved_ns}": does not match event.namespace',
            "involvedObject.namespace",
        )
        if not body.get("eventTime"):
            if (not involved_ns and namespace not in ("", "default")) or (
                involved_ns and namespace != involved_ns
            ):
                causes.append(mismatch)
            return causes
        if not involved_ns and namespace not in ("default", "kube-system"):
            causes.append(mismatch)
        limits = (
            (self.controller_field, "reportingComponent", None),
            ("reportingInstance", "reportingInstance", 128),
            ("action", "action", 128),
            ("reason", "reason", 128),
        )
        for field, key, limit in limits:
            value = body.get(key) or ""
            if not value:
                causes.append(_required(field))
            elif limit is not None and len(value) > limit:
                causes.append(_too_long(field, limit))
        if len(body.get("message") or "") > 1024:
            causes.append(_too_long("message", 1024))
        return causes


class EventsV1Strategy(CoreEventStrategy):
    """events.k8s.io/v1: the legacy rules plus the strict ones for new-style Events."""

    name_rule = "subdomain"
    controller_field = "reportingController"

    def validate(self, body: dict[str, Any], old: dict[str, Any] | None) -> list[Cause]:
        if old is not None:
            return []
        causes = self.legacy_rules(body)
        if not body.get("eventTime"):
            causes.append(_required("eventTime"))
        if body.get("type") not in ("Normal", "Warning"):
            causes.append(
                Cause(
                    "FieldValueInvalid",
                    f'Invalid value: "": has invalid value: {body.get("type") or ""}',
                    "type",
                )
            )
        for core_field, v1_field in (
            ("firstTimestamp", "deprecatedFirstTimestamp"),
            ("lastTimestamp", "deprecatedLastTimestamp"),
            ("count", "deprecatedCount"),
        ):
            if body.get(core_field):
                causes.append(Cause("FieldValueInvalid", 'Invalid value: "": needs to be unset', v1_field))
        source = body.get("source") or {}
        if source.get("component") or source.get("host"):
            causes.append(
                Cause("FieldValueInvalid", 'Invalid value: "": needs to be unset', "deprecatedSource")
            )
        series = body.get("series")
        if isinstance(series, dict):
            if int(series.get("count") or 0) < 2:
                causes.append(
                    Cause("FieldValueInvalid", 'Invalid value: "": should be at least 2', "series.count")
                )
            if not series.get("lastObservedTime"):
                causes.append(_required("series.lastObservedTime"))
        return causes


def _since(value: Any, micro: bool) -> str:
    if not value:
        return "<unknown>"
    return age(parse_time(str(value), micro).strftime("%Y-%m-%dT%H:%M:%SZ"))


def table_cells(event: dict[str, Any]) -> list[Any]:
    """printEvent (wide, as the server always prints): Last Seen, Type, Reason, Object, Subobject,
    Source, Message, First Seen, Count, Name."""
    first = (
        _since(event["firstTimestamp"], False)
        if event.get("firstTimestamp")
        else _since(event.get("eventTime"), True)
    )
    last = _since(event["lastTimestamp"], False) if event.get("lastTimestamp") else first
    count = event.get("count") or 0
    series = event.get("series")
    if isinstance(series, dict):
        last = _since(series.get("lastObservedTime"), True)
        count = series.get("count") or 0
    elif not count:
        count = 1  # singleton events of the new API carry no count
    involved = event.get("involvedObject") or {}
    kind = str(involved.get("kind") or "").lower()
    target = f"{kind}/{involved['name']}" if involved.get("name") else kind
    source = event.get("source") or {}
    component = source.get("component") or event.get("reportingComponent") or ""
    host = source.get("host") or event.get("reportingInstance") or ""
    shown_source = f"{component}, {host}" if host else component
    return [
        last,
        event.get("type") or "",
        event.get("reason") or "",
        target,
        involved.get("fieldPath") or "",
        shown_source,
        str(event.get("message") or "").strip(),
        first,
        int(count),
        event["metadata"]["name"],
    ]


TABLE_COLUMNS = [
    ("Last Seen", "string", 0, ""),
    ("Type", "string", 0, ""),
    ("Reason", "string", 0, ""),
    ("Object", "string", 0, ""),
    ("Subobject", "string", 1, ""),
    ("Source", "string", 1, ""),
    ("Message", "string", 0, ""),
    ("First Seen", "string", 1, ""),
    ("Count", "string", 1, ""),
    ("Name", "string", 1, "name"),
]
