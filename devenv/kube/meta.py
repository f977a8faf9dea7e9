"""ObjectMeta handling shared by every resource type: names, system fields, timestamps."""

from __future__ import annotations

import base64
import re
import secrets
import string
from datetime import UTC, datetime
from typing import Any

from .errors import Cause

OBJECT_META_FIELDS = {
    "name",
    "generateName",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
    "selfLink",
}

_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(value: str) -> datetime:
    return datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


def age(timestamp: str | None) -> str:
    """kubectl's short human duration ("5s", "3m", "2h", "4d")."""
    if not timestamp:
        return "<unknown>"
    seconds = int((datetime.now(UTC) - parse_time(timestamp)).total_seconds())
    seconds = max(seconds, 0)
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 3600 * 3:
        return f"{seconds // 60}m"
    if seconds < 86400 * 2:
        return f"{seconds // 3600}h"
    return f"{seconds // 86400}d"


def generate_suffix() -> str:
    alphabet = "bcdfghjklmnpqrstvwxz2456789"  # upstream avoids vowels and look-alikes
    return "".join(secrets.choice(alphabet) for _ in range(5))


def validate_name(name: str, dns_label: bool) -> list[Cause]:
    if dns_label:
        if len(name) > 63 or not _LABEL.match(name):
            return [
                Cause(
                    "FieldValueInvalid",
                    f'Invalid value: "{name}": a lowercase RFC 1123 label must consist of lower case alphanumeric '
                    "characters or '-', and must start and end with an alphanumeric character",
                    "metadata.name",
                )
            ]
        return []
    if len(name) > 253 or not _SUBDOMAIN.match(name):
        return [
            Cause(
                "FieldValueInvalid",
                f'Invalid value: "{name}": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric '
                "characters, '-' or '.', and must start and end with an alphanumeric character",
                "metadata.name",
            )
        ]
    return []


def validate_labels(meta: dict[str, Any]) -> list[Cause]:
    causes: list[Cause] = []
    for key in ("labels", "annotations"):
        value = meta.get(key)
        if value is None:
            continue
        if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            causes.append(
                Cause(
                    "FieldValueInvalid", "Invalid value: must be a map of string to string", f"metadata.{key}"
                )
            )
        elif key == "labels":
            for label_key, label_value in value.items():
                if len(label_value) > 63 or not re.fullmatch(
                    r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?", label_value
                ):
                    causes.append(
                        Cause(
                            "FieldValueInvalid",
                            f'Invalid value: "{label_value}": a valid label must be an empty string or consist of alphanumeric characters',
                            "metadata.labels",
                        ),
                    )
                    break
                if not label_key:
                    causes.append(
                        Cause(
                            "FieldValueInvalid",
                            'Invalid value: "": name part must be non-empty',
                            "metadata.labels",
                        )
                    )
    finalizers = meta.get("finalizers")
    if finalizers is not None and (
        not isinstance(finalizers, list) or not all(isinstance(f, str) for f in finalizers)
    ):
        causes.append(
            Cause("FieldValueInvalid", "Invalid value: must be a list of strings", "metadata.finalizers")
        )
    return causes


def clean_meta(meta: Any) -> dict[str, Any]:
    """Drop unknown ObjectMeta fields (the decoder does this upstream) and managedFields (no SSA here)."""
    if not isinstance(meta, dict):
        return {}
    return {
        k: v
        for k, v in meta.items()
        if k in OBJECT_META_FIELDS and k not in ("managedFields", "selfLink") and v is not None
    }


def secret_data(body: dict[str, Any]) -> list[Cause]:
    """Merge stringData into base64 data (stringData wins) and default the type, as the Secret strategy does."""
    causes: list[Cause] = []
    data = dict(body.get("data") or {})
    for key, value in data.items():
        if not isinstance(value, str):
            causes.append(
                Cause("FieldValueInvalid", "Invalid value: must be a base64 string", f"data[{key}]")
            )
            continue
        try:
            base64.b64decode(value, validate=True)
        except ValueError:
            causes.append(Cause("FieldValueInvalid", "Invalid value: illegal base64 data", f"data[{key}]"))
    for key, value in (body.pop("stringData", None) or {}).items():
        data[key] = base64.b64encode(str(value).encode()).decode()
    for key in data:
        if not key or not all(c in string.ascii_letters + string.digits + "-._" for c in key):
            causes.append(
                Cause(
                    "FieldValueInvalid",
                    f"Invalid value: \"{key}\": a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
                    f"data[{key}]",
                )
            )
    if data:
        body["data"] = data
    else:
        body.pop("data", None)
    body.setdefault("type", "Opaque")
    return causes
