"""osprov's metric names (pure: workflows emit some of them through the workflow meter).

See osprov.runtime.metrics for how they are exported and what each one counts.
"""

from __future__ import annotations

RECONCILES = "osprov_reconciles"
CLOUD_CALLS = "osprov_cloud_calls"
CLOUD_CALL_SECONDS = "osprov_cloud_call_seconds"
REBUILDS = "osprov_rebuilds"
BRIDGE_EVENTS = "osprov_bridge_events"
BRIDGE_RELISTS = "osprov_bridge_relists"
