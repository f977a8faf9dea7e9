"""Per-request write options (query parameters every write verb shares)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class WriteOptions:
    dry_run: bool = False
    strict_fields: bool = False  # fieldValidation=Strict: unknown fields are a 400, not silently pruned
