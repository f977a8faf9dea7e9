"""Per-request options every write verb shares (query parameters, or DeleteOptions in the body)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class WriteOptions:
    dry_run: bool = False
    strict_fields: bool = False  # fieldValidation=Strict: unknown fields are a 400, not silently pruned
    manager: str = ""  # fieldManager: who owns what this write sets (metadata.managedFields)
    applied: bool = False  # server-side apply: managedFields were computed by fieldmanager.apply


@dataclass
class DeleteOptions:
    dry_run: bool = False
    propagation: str = ""  # Orphan | Background | Foreground; "" = the object's finalizers decide
    preconditions: dict[str, Any] = field(default_factory=dict)

    def write(self) -> WriteOptions:
        return WriteOptions(dry_run=self.dry_run, manager="")
