"""The built-in kinds the emulator serves (stored objects; no controllers act on them, except the inline
namespace deletion and garbage collection) and the strategies of those not in strategy.py/events.py."""

from __future__ import annotations

import json
from typing import Any

from . import builtin_schemas as schemas
from . import events
from .errors import Cause, not_supported
from .resources import CRD_GROUP, ResourceType, VersionInfo, crd_status
from .strategy import (
    ConfigMapStrategy,
    NamespaceStrategy,
    Objects,
    SecretStrategy,
    ServiceStrategy,
    Strategy,
    immutable,
    invalid,
)

RBAC_GROUP = "rbac.authorization.k8s.io"


def _required(field: str, detail: str = "") -> Cause:
    return Cause("FieldValueRequired", f"Required value: {detail}" if detail else "Required value", field)


class LeaseStrategy(Strategy):
    def validate(self, body: dict[str, Any], old: dict[str, Any] | None) -> list[Cause]:
        spec = body.get("spec") or {}
        causes = []
        duration = spec.get("leaseDurationSeconds")
        if duration is not None and duration <= 0:
            causes.append(invalid("spec.leaseDurationSeconds", duration, "must be greater than 0"))
        transitions = spec.get("leaseTransitions")
        if transitions is not None and transitions < 0:
            causes.append(invalid("spec.leaseTransitions", transitions, "must be greater than or equal to 0"))
        if spec.get("preferredHolder") and not spec.get("strategy"):
            causes.append(
                Cause(
                    "FieldValueForbidden",
                    "Forbidden: may only be specified if `strategy` is defined",
                    "spec.preferredHolder",
                )
            )
        return causes


class RoleStrategy(Strategy):
    name_rule = "path"
    namespaced = True

    def validate(self, body: dict[str, Any], old: dict[str, Any] | None) -> list[Cause]:
        causes: list[Cause] = []
        for i, rule in enumerate(body.get("rules") or []):
            where = f"rules[{i}]"
            if not rule.get("verbs"):
                causes.append(_required(f"{where}.verbs", "verbs must contain at least one value"))
            if rule.get("nonResourceURLs"):
                if self.namespaced:
                    shown = json.dumps(rule["nonResourceURLs"])
                    causes.append(
                        Cause(
                            "FieldValueInvalid",
                            f"Invalid value: {shown}: namespaced rules cannot apply to non-resource URLs",
                            f"{where}.nonResourceURLs",
                        )
                    )
                continue
            if not rule.get("apiGroups"):
                causes.append(
                    _required(f"{where}.apiGroups", "resource rules must supply at least one api group")
                )
            if not rule.get("resources"):
                causes.append(
                    _required(f"{where}.resources", "resource rules must supply at least one resource")
                )
        return causes


class ClusterRoleStrategy(RoleStrategy):
    namespaced = False


class BindingStrategy(Strategy):
    name_rule = "path"
    role_kinds: tuple[str, ...] = ("ClusterRole", "Role")
    namespaced = True

    def validate(self, body: dict[str, Any], old: dict[str, Any] | None) -> list[Cause]:
        causes: list[Cause] = []
        ref = body.get("roleRef") or {}
        if ref.get("apiGroup") != RBAC_GROUP:
            causes.append(not_supported("roleRef.apiGroup", ref.get("apiGroup", ""), (RBAC_GROUP,)))
        if ref.get("kind") not in self.role_kinds:
            causes.append(not_supported("roleRef.kind", ref.get("kind", ""), self.role_kinds))
        if not ref.get("name"):
            causes.append(_required("roleRef.name"))
        if old is not None and ref != old.get("roleRef"):
            causes.append(
                Cause("FieldValueInvalid", 'Invalid value: "object": cannot change roleRef', "roleRef")
            )
        for i, subject in enumerate(body.get("subjects") or []):
            where = f"subjects[{i}]"
            kind = subject.get("kind")
            if kind not in ("ServiceAccount", "User", "Group"):
                causes.append(not_supported(f"{where}.kind", kind or "", ("Group", "ServiceAccount", "User")))
            if not subject.get("name"):
                causes.append(_required(f"{where}.name"))
            if kind == "ServiceAccount":
                if subject.get("apiGroup"):
                    causes.append(not_supported(f"{where}.apiGroup", subject["apiGroup"], ("",)))
                if not self.namespaced and not subject.get("namespace"):
                    causes.append(_required(f"{where}.namespace"))
            elif kind in ("User", "Group") and subject.get("apiGroup") != RBAC_GROUP:
                causes.append(not_supported(f"{where}.apiGroup", subject.get("apiGroup", ""), (RBAC_GROUP,)))
        return causes


class ClusterBindingStrategy(BindingStrategy):
    role_kinds = ("ClusterRole",)
    namespaced = False


_POD_DEFAULTS = {
    "restartPolicy": "Always",
    "terminationGracePeriodSeconds": 30,
    "dnsPolicy": "ClusterFirst",
    "securityContext": {},
    "schedulerName": "default-scheduler",
}


def _default_pod_spec(spec: dict[str, Any]) -> None:
    for key, value in _POD_DEFAULTS.items():
        spec.setdefault(key, value)
    for container in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        if not isinstance(container, dict):
            continue
        container.setdefault("terminationMessagePath", "/dev/termination-log")
        container.setdefault("terminationMessagePolicy", "File")
        image = str(container.get("image") or "")
        latest = ":" not in image.rsplit("/", 1)[-1] or image.endswith(":latest")
        container.setdefault("imagePullPolicy", "Always" if latest else "IfNotPresent")
        for port in container.get("ports") or []:
            if isinstance(port, dict):
                port.setdefault("protocol", "TCP")


class DeploymentStrategy(Strategy):
    generation = True

    def prepare_create(self, body: dict[str, Any], objects: Objects) -> None:
        body["status"] = {}

    def prepare_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        new["status"] = old.get("status", {})

    def default(self, body: dict[str, Any]) -> None:
        spec = body.setdefault("spec", {})
        spec.setdefault("replicas", 1)
        strategy = spec.setdefault("strategy", {})
        strategy.setdefault("type", "RollingUpdate")
        if strategy.get("type") == "RollingUpdate":
            rolling = strategy.setdefault("rollingUpdate", {})
            rolling.setdefault("maxUnavailable", "25%")
            rolling.setdefault("maxSurge", "25%")
        spec.setdefault("revisionHistoryLimit", 10)
        spec.setdefault("progressDeadlineSeconds", 600)
        pod = (spec.get("template") or {}).get("spec")
        if isinstance(pod, dict):
            _default_pod_spec(pod)

    def validate(self, body: dict[str, Any], old: dict[str, Any] | None) -> list[Cause]:
        spec = body.get("spec") or {}
        causes: list[Cause] = []
        selector = spec.get("selector")
        template = spec.get("template") or {}
        labels = (template.get("metadata") or {}).get("labels") or {}
        if not selector:
            causes.append(_required("spec.selector"))
        elif not _selector_matches(selector, labels):
            causes.append(
                Cause(
                    "FieldValueInvalid",
                    f"Invalid value: {json.dumps(labels)}: `selector` does not match template `labels`",
                    "spec.template.metadata.labels",
                )
            )
        if (spec.get("replicas") or 0) < 0:
            causes.append(invalid("spec.replicas", spec["replicas"], "must be greater than or equal to 0"))
        strategy = spec.get("strategy") or {}
        if strategy.get("type") not in ("Recreate", "RollingUpdate"):
            causes.append(
                not_supported("spec.strategy.type", strategy.get("type", ""), ("Recreate", "RollingUpdate"))
            )
        if strategy.get("type") == "Recreate" and strategy.get("rollingUpdate") is not None:
            causes.append(
                Cause(
                    "FieldValueForbidden",
                    "Forbidden: may not be specified when strategy `type` is 'Recreate'",
                    "spec.strategy.rollingUpdate",
                )
            )
        pod = template.get("spec") or {}
        if pod.get("restartPolicy", "Always") != "Always":
            causes.append(
                not_supported("spec.template.spec.restartPolicy", pod["restartPolicy"], ("Always",))
            )
        containers = pod.get("containers") or []
        if not containers:
            causes.append(_required("spec.template.spec.containers"))
        for i, container in enumerate(containers):
            for key in ("name", "image"):
                if not container.get(key):
                    causes.append(_required(f"spec.template.spec.containers[{i}].{key}"))
        if old is not None and selector != (old.get("spec") or {}).get("selector"):
            causes.append(immutable("spec.selector", selector))
        return causes


def _selector_matches(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    from .selectors import Requirement

    requirements = [Requirement(k, "=", (v,)) for k, v in (selector.get("matchLabels") or {}).items()]
    ops = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!exists"}
    for expr in selector.get("matchExpressions") or []:
        requirements.append(
            Requirement(
                expr.get("key", ""), ops.get(expr.get("operator"), "in"), tuple(expr.get("values") or ())
            )
        )
    return bool(requirements) and all(r.matches(labels) for r in requirements)


class PodDisruptionBudgetStrategy(Strategy):
    generation = True

    def prepare_create(self, body: dict[str, Any], objects: Objects) -> None:
        body["status"] = {
            "disruptionsAllowed": 0,
            "currentHealthy": 0,
            "desiredHealthy": 0,
            "expectedPods": 0,
        }

    def prepare_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        new["status"] = old.get("status", {})

    def validate(self, body: dict[str, Any], old: dict[str, Any] | None) -> list[Cause]:
        spec = body.get("spec") or {}
        if spec.get("minAvailable") is not None and spec.get("maxUnavailable") is not None:
            return [
                Cause(
                    "FieldValueInvalid",
                    'Invalid value: "object": minAvailable and maxUnavailable cannot be both set',
                    "spec",
                )
            ]
        return []


class CRDStrategy(Strategy):
    strict_finalizers = False
    generation = True

    def prepare_create(self, body: dict[str, Any], objects: Objects) -> None:
        body["status"] = crd_status(body)

    def prepare_update(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        new["status"] = crd_status(new, old.get("status"))


def _type(
    group: str,
    plural: str,
    kind: str,
    namespaced: bool,
    schema: dict[str, Any],
    strategy: Strategy,
    short_names: tuple[str, ...] = (),
    categories: tuple[str, ...] = (),
    status: bool = False,
    verbs: tuple[str, ...] | None = None,
) -> ResourceType:
    rtype = ResourceType(
        group,
        plural,
        kind.lower(),
        kind,
        namespaced,
        [VersionInfo("v1", True, True, schema=schema, status_subresource=status)],
        list(short_names),
        list(categories),
        True,
        f"{kind}List",
        strategy=strategy,
    )
    if verbs is not None:
        rtype.verbs = verbs
    return rtype


def builtin_types() -> list[ResourceType]:
    """Every built-in type with its own storage."""
    no_collection = ("create", "delete", "get", "list", "patch", "update", "watch")
    core_events = _type("", "events", "Event", True, schemas.EVENT, events.CoreEventStrategy(), ("ev",))
    core_events.fields = events.CORE_FIELDS
    secrets = _type("", "secrets", "Secret", True, schemas.SECRET, SecretStrategy())
    secrets.fields = {"type": lambda o: str(o.get("type") or "")}
    namespaces = _type(
        "",
        "namespaces",
        "Namespace",
        False,
        schemas.NAMESPACE,
        NamespaceStrategy(),
        ("ns",),
        status=True,
        verbs=no_collection,
    )
    namespaces.fields = {"status.phase": lambda o: str((o.get("status") or {}).get("phase") or "")}
    return [
        namespaces,
        secrets,
        _type("", "configmaps", "ConfigMap", True, schemas.CONFIG_MAP, ConfigMapStrategy(), ("cm",)),
        _type("", "serviceaccounts", "ServiceAccount", True, schemas.SERVICE_ACCOUNT, Strategy(), ("sa",)),
        _type(
            "",
            "services",
            "Service",
            True,
            schemas.SERVICE,
            ServiceStrategy(),
            ("svc",),
            ("all",),
            status=True,
        ),
        core_events,
        _type("coordination.k8s.io", "leases", "Lease", True, schemas.LEASE, LeaseStrategy()),
        _type(RBAC_GROUP, "roles", "Role", True, schemas.ROLE, RoleStrategy()),
        _type(RBAC_GROUP, "rolebindings", "RoleBinding", True, schemas.ROLE_BINDING, BindingStrategy()),
        _type(RBAC_GROUP, "clusterroles", "ClusterRole", False, schemas.CLUSTER_ROLE, ClusterRoleStrategy()),
        _type(
            RBAC_GROUP,
            "clusterrolebindings",
            "ClusterRoleBinding",
            False,
            schemas.ROLE_BINDING,
            ClusterBindingStrategy(),
        ),
        _type(
            "apps",
            "deployments",
            "Deployment",
            True,
            schemas.DEPLOYMENT,
            DeploymentStrategy(),
            ("deploy",),
            ("all",),
            status=True,
        ),
        _type(
            "policy",
            "poddisruptionbudgets",
            "PodDisruptionBudget",
            True,
            schemas.POD_DISRUPTION_BUDGET,
            PodDisruptionBudgetStrategy(),
            ("pdb",),
            status=True,
        ),
        _type(
            CRD_GROUP,
            "customresourcedefinitions",
            "CustomResourceDefinition",
            False,
            schemas.CRD_SCHEMA,
            CRDStrategy(),
            ("crd", "crds"),
            ("api-extensions",),
            status=True,
        ),
    ]


def builtin_views() -> list[ResourceType]:
    """Types served from another type's storage: events.k8s.io/v1 Events (the core/v1 Event objects)."""
    view = _type(
        "events.k8s.io", "events", "Event", True, schemas.EVENTS_V1_EVENT, events.EventsV1Strategy(), ("ev",)
    )
    view.storage_key = "events"
    view.to_storage = events.to_core
    view.from_storage = events.from_core
    view.fields = events.V1_FIELDS
    return [view]
