"""ObjectMeta fields, timestamps and generated names shared by every resource type."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime

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

# Set by the server, never taken from a request body.
SYSTEM_FIELDS = (
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
)


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
