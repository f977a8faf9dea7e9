"""osprov's own metrics, exported through the Temporal SDK runtime's Prometheus endpoint.

One mechanism for everything: the runtime serves /metrics (SDK metrics plus these) on
OSPROV_METRICS_PORT. Workflow metrics use the workflow meter (not emitted during replay), activity
metrics the activity meter, the bridge the runtime's meter. Names (osprov.api.metrics; all counters
unless noted):

- osprov_reconciles{kind, result=ok|waiting|error|invalid, reason}   passes of the entity loop
- osprov_cloud_calls{activity, outcome}      activities by name (service.verb) and outcome
                                             (ok or the typed error: NotFound, Transient, …)
- osprov_cloud_call_seconds{activity}        histogram of activity durations
- osprov_rebuilds{kind, event=submitted|settled|parked}   Server image rebuilds
- osprov_bridge_events{kind, action=signalled|dropped}, osprov_bridge_relists{resource}
"""

from __future__ import annotations

from datetime import timedelta

from temporalio.client import Client
from temporalio.common import MetricMeter
from temporalio.runtime import PrometheusConfig, Runtime, TelemetryConfig


def runtime(port: int, host: str = "0.0.0.0", heartbeat_seconds: float = 60.0) -> Runtime | None:
    """A runtime serving Prometheus on host:port (none when port is 0) whose workers report themselves
    to the server every `heartbeat_seconds` (their pollers' last successful poll: the worker's health);
    None (the default runtime) when both are the SDK's defaults."""
    if not port and heartbeat_seconds == 60.0:
        return None
    prometheus = PrometheusConfig(bind_address=f"{host}:{port}", durations_as_seconds=True) if port else None
    return Runtime(
        telemetry=TelemetryConfig(metrics=prometheus),
        worker_heartbeat_interval=timedelta(seconds=heartbeat_seconds),
    )


def meter_of(client: Client) -> MetricMeter:
    """The meter of the runtime a client was connected with (for processes that are not workers)."""
    return (client.service_client.config.runtime or Runtime.default()).metric_meter
