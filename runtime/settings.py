"""Process settings from the environment (12-factor): one place that names every variable.

docker-compose.yml, deploy/ and the local stack's env file set exactly these names.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field


def _env(name: str, default: str) -> str:
    value = os.environ.get(name, "").strip()
    return value or default


def _list(name: str, default: str) -> list[str]:
    return [v.strip() for v in _env(name, default).split(",") if v.strip()]


def _flag(name: str, default: str) -> bool:
    value = _env(name, default).lower()
    if value not in ("true", "false"):
        raise ValueError(f"{name} must be true or false, not {value[:20]!r}")
    return value == "true"


@dataclass(frozen=True)
class Settings:
    temporal_address: str = field(default_factory=lambda: _env("OSPROV_TEMPORAL_ADDRESS", "localhost:7233"))
    temporal_namespace: str = field(default_factory=lambda: _env("OSPROV_TEMPORAL_NAMESPACE", "default"))
    task_queue: str = field(default_factory=lambda: _env("OSPROV_TASK_QUEUE", "osprov"))
    # Kubernetes namespaces the bridge watches (the controller reads only these: see the security model).
    namespaces: list[str] = field(default_factory=lambda: _list("OSPROV_NAMESPACES", "default"))
    kinds: list[str] = field(
        default_factory=lambda: _list("OSPROV_KINDS", "")
    )  # empty: every kind with a workflow
    keystone_name: str = field(default_factory=lambda: _env("OSPROV_KEYSTONE_NAME", "keystone"))
    # Namespaces whose destructive steps always wait for an approval ("*": every namespace), whatever a
    # resource's spec.approvalPolicy says (workflows/approval.py).
    approval_namespaces: list[str] = field(default_factory=lambda: _list("OSPROV_APPROVAL_NAMESPACES", ""))
    resync_seconds: float = field(default_factory=lambda: float(_env("OSPROV_RESYNC_SECONDS", "600")))
    activity_threads: int = field(default_factory=lambda: int(_env("OSPROV_ACTIVITY_THREADS", "8")))
    # Workflows the worker keeps in memory between their tasks. One evicted is replayed from its history at
    # its next task: with Temporal's default 1,000, P3's 4,067 live workflows cost ~45 % more worker CPU.
    # Each cached workflow costs ~0.11 MiB, so 5,000 fit the pod's 1.5 GiB ("The workflow cache",
    # docs/benchmarks.md).
    workflow_cache: int = field(default_factory=lambda: int(_env("OSPROV_WORKFLOW_CACHE", "5000")))
    # Workflow tasks the worker runs at once. They share one interpreter: with a backlog, each of
    # Temporal's default 100 took ~100 times its own CPU time and passed the 5 s task timeout, its work
    # lost (docs/benchmarks.md, "Workflow tasks at once").
    workflow_tasks: int = field(default_factory=lambda: int(_env("OSPROV_WORKFLOW_TASKS", "8")))
    # How workflow code runs (docs/benchmarks.md measures each): "passthrough" = Temporal's sandbox, with
    # osprov's own modules imported once instead of once per workflow run; "sandbox" = the sandbox
    # re-importing them per run; "none" = no sandbox.
    workflow_runner: str = field(default_factory=lambda: _env("OSPROV_WORKFLOW_RUNNER", "passthrough"))
    metrics_port: int = field(default_factory=lambda: int(_env("OSPROV_METRICS_PORT", "0")))
    log_level: str = field(default_factory=lambda: _env("OSPROV_LOG_LEVEL", "INFO"))
    # Refuse to start without payload encryption keys (OSPROV_CODEC_KEYS): true unless a development
    # setup says otherwise (the local stack's env file does; docs/security.md).
    require_encryption: bool = field(default_factory=lambda: _flag("OSPROV_REQUIRE_ENCRYPTION", "true"))
    # Temporal transport security (osprov.runtime.temporal.transport). Empty OSPROV_TEMPORAL_TLS means
    # "on when any option below is set". The paths name PEM files; the API key is sent as a bearer token.
    temporal_tls: str = field(default_factory=lambda: _env("OSPROV_TEMPORAL_TLS", ""))
    temporal_tls_ca: str = field(default_factory=lambda: _env("OSPROV_TEMPORAL_TLS_CA", ""))
    temporal_tls_cert: str = field(default_factory=lambda: _env("OSPROV_TEMPORAL_TLS_CERT", ""))
    temporal_tls_key: str = field(default_factory=lambda: _env("OSPROV_TEMPORAL_TLS_KEY", ""))
    temporal_tls_server_name: str = field(default_factory=lambda: _env("OSPROV_TEMPORAL_TLS_SERVER_NAME", ""))
    temporal_api_key: str = field(default_factory=lambda: _env("OSPROV_TEMPORAL_API_KEY", ""), repr=False)
    temporal_api_key_file: str = field(default_factory=lambda: _env("OSPROV_TEMPORAL_API_KEY_FILE", ""))
    # The region inventory (docs/inventory.md): the name of the cluster-scoped InventoryConfig the worker
    # publishes Flavors, VolumeClasses and Images for, and checks Volumes and Servers against; empty: no
    # inventory (no Schedules, no checks). The Schedules run each inventory every interval.
    inventory_config: str = field(default_factory=lambda: _env("OSPROV_INVENTORY_CONFIG", ""))
    inventory_interval_seconds: float = field(
        default_factory=lambda: float(_env("OSPROV_INVENTORY_INTERVAL_SECONDS", "300"))
    )
    # Health endpoints (/healthz, /readyz) of the worker and the bridge; 0 = not served.
    health_port: int = field(default_factory=lambda: int(_env("OSPROV_HEALTH_PORT", "0")))
    # Liveness means progress: a bridge watch with no event, bookmark or completed request, or a worker
    # poller with no successful poll, within this window fails /healthz.
    progress_window_seconds: float = field(
        default_factory=lambda: float(_env("OSPROV_PROGRESS_WINDOW_SECONDS", "300"))
    )
    # How often the worker reports itself (its pollers' last successful poll) to Temporal: 1-60 s.
    worker_heartbeat_seconds: float = field(
        default_factory=lambda: float(_env("OSPROV_WORKER_HEARTBEAT_SECONDS", "60"))
    )
    # Bridge leader election (coordination.k8s.io/v1 Lease; client-go semantics). The Lease lives in
    # OSPROV_LEASE_NAMESPACE (the pod's namespace in deploy/), else in the first watched namespace.
    lease_namespace: str = field(default_factory=lambda: _env("OSPROV_LEASE_NAMESPACE", ""))
    lease_name: str = field(default_factory=lambda: _env("OSPROV_LEASE_NAME", "osprov-bridge"))
    lease_duration_seconds: float = field(
        default_factory=lambda: float(_env("OSPROV_LEASE_DURATION_SECONDS", "10"))
    )
    lease_renew_deadline_seconds: float = field(
        default_factory=lambda: float(_env("OSPROV_LEASE_RENEW_DEADLINE_SECONDS", "7"))
    )
    lease_retry_period_seconds: float = field(
        default_factory=lambda: float(_env("OSPROV_LEASE_RETRY_PERIOD_SECONDS", "2"))
    )
