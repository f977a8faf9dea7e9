"""Placeholder: the slowed fake virt driver is installed here (see install())."""

from __future__ import annotations


def install() -> None:
    return None
