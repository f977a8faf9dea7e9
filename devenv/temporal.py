"""The Temporal dev server (temporal CLI from the project venv), persistent, with the project's search attributes."""

from __future__ import annotations

import json

import yaml

from devenv import procs
from devenv.config import HOST, PORTS, REPO_ROOT, project_bin, state_dir
from osprov.api.search_attributes import SEARCH_ATTRIBUTES

NAMESPACE = "default"


def address() -> str:
    return f"{HOST}:{PORTS.temporal}"


def ui_url() -> str:
    return f"http://{HOST}:{PORTS.temporal_ui}"


# The server settings a production Temporal gets too (docker-compose.yml mounts the same file).
DYNAMIC_CONFIG = REPO_ROOT / "deploy" / "temporal" / "dynamicconfig.yaml"


def dynamic_config_flags() -> list[str]:
    """deploy/temporal/dynamicconfig.yaml as the dev server's --dynamic-config-value flags (unconstrained
    values only: the file sets each key once, for every namespace)."""
    flags: list[str] = []
    for key, entries in yaml.safe_load(DYNAMIC_CONFIG.read_text()).items():
        [entry] = entries
        assert not entry.get("constraints"), f"{key}: the dev server takes unconstrained values only"
        flags += ["--dynamic-config-value", f"{key}={json.dumps(entry['value'])}"]
    return flags


def start(codec_endpoint: str) -> None:
    """`codec_endpoint`: where the Web UI sends payloads to decode (osprov's codec server, token included)."""
    argv: list[str] = [
        str(project_bin("temporal")),
        "server",
        "start-dev",
        "--db-filename",
        str(state_dir() / "temporal.db"),
        # Write-ahead log, synced at checkpoints: a commit survives a kill -9 of the server (the log is in
        # the OS's page cache), only a power loss can roll back the last ones. The default (a rollback
        # journal, fsync per commit) cost the server half as much CPU again per resource (docs/benchmarks.md).
        "--sqlite-pragma",
        "journal_mode=wal",
        "--sqlite-pragma",
        "synchronous=normal",
        "--ip",
        HOST,
        "--port",
        str(PORTS.temporal),
        "--ui-port",
        str(PORTS.temporal_ui),
        "--http-port",
        str(PORTS.temporal_http),
        "--metrics-port",
        str(PORTS.temporal_metrics),
        "--ui-disable-news-fetch",
        # The Web UI decodes encrypted payloads through osprov's codec server (started by the stack).
        "--ui-codec-endpoint",
        codec_endpoint,
        # Flag workflows whose workflow tasks keep failing (a bug): TemporalReportedProblems is searchable.
        "--dynamic-config-value",
        "system.numConsecutiveWorkflowTaskProblemsToTriggerSearchAttribute=2",
        # An idle poller's long poll returns empty after 10 s instead of 60 s: a worker's liveness (its last
        # successful poll, worker/health.py) can then be judged over a short window in tests.
        "--dynamic-config-value",
        'matching.longPollExpirationInterval="10s"',
        *dynamic_config_flags(),
        "--log-level",
        "warn",
    ]
    for name, kind in SEARCH_ATTRIBUTES.items():
        argv += ["--search-attribute", f"{name}={kind}"]
    procs.start("temporal", argv)
    wait_healthy()


def wait_healthy(timeout: float = 60) -> None:
    procs.wait_until(
        lambda: procs.tcp_open(PORTS.temporal) and procs.http_status(ui_url()) == 200,
        timeout,
        "Temporal frontend and Web UI",
        "temporal",
    )
