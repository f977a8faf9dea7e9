"""meta.k8s.io/v1 Table output (what `kubectl get` asks for), with CRD additionalPrinterColumns."""

from __future__ import annotations

import json
import re
from typing import Any

from .httpio import partial
from .meta import age
from .printers import printer_for
from .resources import PrinterColumn, ResourceType

_TOKEN = re.compile(
    r"""\.([A-Za-z0-9_$-]+)|\[\s*'([^']*)'\s*\]|\[\s*"([^"]*)"\s*\]|\[(\*|-?\d+)\]|\[\?\(@\.([A-Za-z0-9_.]+)\s*(==|!=)\s*["']?([^"')]*)["']?\)\]"""
)


def json_path(obj: Any, path: str) -> list[Any]:
    """The subset of kubectl JSONPath used in printer columns: fields, indexes, [*], [?(@.a=="b")]."""
    path = path.strip()
    if path.startswith("{") and path.endswith("}"):
        path = path[1:-1]
    path = path.lstrip("$")
    nodes = [obj]
    pos = 0
    while pos < len(path):
        match = _TOKEN.match(path, pos)
        if match is None:
            return []
        pos = match.end()
        field = match.group(1) or match.group(2) or match.group(3)
        nxt: list[Any] = []
        for node in nodes:
            if field is not None:
                if isinstance(node, dict) and field in node:
                    nxt.append(node[field])
            elif match.group(4) is not None:
                if isinstance(node, list):
                    if match.group(4) == "*":
                        nxt.extend(node)
                    elif -len(node) <= int(match.group(4)) < len(node):
                        nxt.append(node[int(match.group(4))])
            elif isinstance(node, list):
                key, op, want = match.group(5), match.group(6), match.group(7)
                for item in node:
                    value: Any = item
                    for seg in key.split("."):
                        value = value.get(seg) if isinstance(value, dict) else None
                    if (
                        str(value) == want if not isinstance(value, bool) else str(value).lower() == want
                    ) == (op == "=="):
                        nxt.append(item)
        nodes = nxt
    return nodes


def _cell(column: PrinterColumn, obj: dict[str, Any]) -> Any:
    values = json_path(obj, column.json_path)
    if not values:
        return None
    value = values[0] if len(values) == 1 else ",".join(str(v) for v in values)
    if column.type == "date" and isinstance(value, str) and column.name != "Created At":
        return age(value)  # the CRD table's "Created At" shows the timestamp itself, as upstream
    if column.type == "integer" and isinstance(value, (int, float)):
        return int(value)
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return value


def _definition(
    name: str, col_type: str, description: str = "", priority: int = 0, fmt: str = ""
) -> dict[str, Any]:
    return {"name": name, "type": col_type, "format": fmt, "description": description, "priority": priority}


_NAME = _definition("Name", "string", "Name must be unique within a namespace.", 0, "name")
_AGE = PrinterColumn(
    "Age",
    "date",
    ".metadata.creationTimestamp",
    "CreationTimestamp is a timestamp representing the server time when this object was created.",
)


def columns_for(rtype: ResourceType, version: str) -> list[PrinterColumn]:
    """Columns of custom resources (and built-ins without a printer: "Created At")."""
    if rtype.builtin:
        return [PrinterColumn("Created At", "date", ".metadata.creationTimestamp")]
    vinfo = rtype.version(version)
    if vinfo is not None and vinfo.printer_columns:
        return vinfo.printer_columns
    return [_AGE]


def _row_object(obj: dict[str, Any], include_object: str) -> dict[str, Any] | None:
    if include_object == "Object":
        return obj
    if include_object == "None":
        return None
    return partial(obj)


def to_table(
    rtype: ResourceType,
    version: str,
    objects: list[dict[str, Any]],
    resource_version: str,
    include_object: str,
) -> dict[str, Any]:
    printer = printer_for(rtype.store_key)
    if printer is not None:
        definitions = [_definition(n, t, "", p, f) for n, t, p, f in printer.columns]
        cells_of = printer.cells
    else:
        columns = columns_for(rtype, version)
        definitions = [_NAME] + [
            _definition(c.name, c.type, c.description, c.priority, c.format) for c in columns
        ]

        def cells_of(obj: dict[str, Any]) -> list[Any]:
            return [obj["metadata"]["name"], *(_cell(c, obj) for c in columns)]

    rows = []
    for obj in objects:
        row: dict[str, Any] = {"cells": cells_of(obj)}
        shown = _row_object(obj, include_object)
        if shown is not None:
            row["object"] = shown
        rows.append(row)
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": resource_version},
        "columnDefinitions": definitions,
        "rows": rows,
    }
