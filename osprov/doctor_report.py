"""What `osprov doctor` found: one typed result per checked assumption, and its text and JSON renderings.

Kept free of I/O so the report's shape is tested without a cloud (tests/test_doctor_report.py).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Literal

Credentials = Literal["controller", "identity"]


@dataclass(frozen=True)
class Check:
    """One assumption of osprov about the target cloud, checked.

    passed is False only when the cloud breaks the assumption (or the check could not run for a reason the
    operator can fix); a warned check passed but the cloud costs osprov something the fix would save (it fails
    nothing); skipped checks did not run (opt-out, no Identity given) and fail nothing.
    """

    name: str
    passed: bool
    detail: str
    fix: str = ""  # what to do about a failure (shown for every failed check)
    credentials: Credentials = "controller"  # whose credentials the check ran with
    skipped: bool = False
    warned: bool = False

    @property
    def failed(self) -> bool:
        return not self.passed and not self.skipped

    @property
    def verdict(self) -> str:
        if self.skipped:
            return "SKIP"
        if self.passed:
            return "WARN" if self.warned else "PASS"
        return "FAIL"


def passed(name: str, credentials: Credentials, detail: str) -> Check:
    return Check(name=name, passed=True, detail=detail, credentials=credentials)


def warned(name: str, credentials: Credentials, detail: str, fix: str) -> Check:
    return Check(name=name, passed=True, detail=detail, fix=fix, credentials=credentials, warned=True)


def failed(name: str, credentials: Credentials, detail: str, fix: str) -> Check:
    return Check(name=name, passed=False, detail=detail, fix=fix, credentials=credentials)


def skipped(name: str, credentials: Credentials, detail: str) -> Check:
    return Check(name=name, passed=False, detail=detail, credentials=credentials, skipped=True)


def exit_code(checks: list[Check]) -> int:
    """0 when no check failed (skipped ones do not count), 1 otherwise."""
    return 1 if any(c.failed for c in checks) else 0


def render_text(checks: list[Check], leftovers: list[str] | None = None) -> str:
    """One line per check (verdict, name, credentials, detail), its fix under every failed or warned one, and
    a summary."""
    width = max((len(c.name) for c in checks), default=0)
    lines: list[str] = []
    for c in checks:
        lines.append(f"{c.verdict}  {c.name:<{width}}  [{c.credentials}]  {c.detail}")
        if (c.failed or c.warned) and c.fix:
            lines.append(f"      fix: {c.fix}")
    n = {v: sum(1 for c in checks if c.verdict == v) for v in ("PASS", "WARN", "FAIL", "SKIP")}
    lines.append(
        f"{len(checks)} checks: {n['PASS']} passed, {n['WARN']} warned, {n['FAIL']} failed, {n['SKIP']} skipped"
    )
    for label in leftovers or []:
        lines.append(f"NOT CLEANED UP: {label} (delete it by hand)")
    return "\n".join(lines)


def render_json(checks: list[Check], leftovers: list[str] | None = None) -> str:
    """For machines: {"passed": bool, "checks": [{name, verdict, passed, skipped, warned, detail, fix,
    credentials}],
    "leftovers": [throwaway objects that could not be deleted]}."""
    return json.dumps(
        {
            "passed": exit_code(checks) == 0,
            "checks": [asdict(c) | {"verdict": c.verdict} for c in checks],
            "leftovers": list(leftovers or []),
        },
        indent=2,
    )
