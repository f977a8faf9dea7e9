"""Fault injection for tests: forced 410s, cut watches, injected errors/latency per verb and resource."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from .errors import ApiError, bad_request, reason_for_code
from .resources import ResourceType

VERBS = {"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection", "*"}


@dataclass
class Injection:
    verb: str
    resource: str  # "projects", "projects.keystone.osh.openstack.org", "projects/status" or "*"
    status: int  # 0 = latency only
    times: int
    delay_s: float

    def matches(self, verb: str, names: set[str]) -> bool:
        return (
            self.times > 0 and self.verb in (verb, "*") and (self.resource == "*" or self.resource in names)
        )

    def error(self) -> ApiError | None:
        if not self.status:
            return None
        reason = reason_for_code(self.status)
        return ApiError(
            self.status, reason, f"injected by the emulator's fault injection ({self.verb} {self.resource})"
        )


def resource_names(rtype: ResourceType, subresource: str) -> set[str]:
    """Every spelling a fault rule may use for this request's resource (RBAC style: x/status is separate)."""
    base = {rtype.plural, rtype.key}
    return {f"{n}/{subresource}" for n in base} if subresource else base


@dataclass
class Faults:
    injections: list[Injection]

    def take(self, verb: str, names: set[str]) -> Injection | None:
        for injection in self.injections:
            if injection.matches(verb, names):
                injection.times -= 1
                return injection
        return None

    def add(self, raw: dict[str, Any]) -> Injection:
        verb = str(raw.get("verb", "*"))
        if verb not in VERBS:
            raise bad_request(f"unknown verb {verb!r}; one of {sorted(VERBS)}")
        injection = Injection(
            verb=verb,
            resource=str(raw.get("resource", "*")),
            status=int(raw.get("status", 0)),
            times=int(raw.get("times", 1)),
            delay_s=float(raw.get("delay_s", 0)),
        )
        self.injections.append(injection)
        return injection

    def describe(self) -> list[dict[str, Any]]:
        return [asdict(i) for i in self.injections if i.times > 0]
