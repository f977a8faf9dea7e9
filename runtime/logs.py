"""structlog JSON logs for every process; stdlib logging (temporalio, openstacksdk) goes through it.

Context (kind, namespace, name, workflow ID) is bound with structlog.contextvars by the worker's
interceptor and the bridge, so every line says which resource it is about.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import MutableMapping
from typing import Any

import structlog

_SHARED: list[Any] = [
    structlog.contextvars.merge_contextvars,
    structlog.stdlib.add_log_level,
    structlog.stdlib.add_logger_name,
    structlog.processors.TimeStamper(fmt="iso", utc=True),
]


def _temporal_context(_: Any, __: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    # temporalio's workflow/activity loggers attach their info under these keys: flatten the useful bits.
    for key in ("temporal_workflow", "temporal_activity"):
        info = event.pop(key, None)
        if isinstance(info, dict):
            for k in ("workflow_id", "workflow_type", "activity_type", "attempt"):
                if k in info:
                    event.setdefault(k, info[k])
    return event


def configure(level: str = "INFO", component: str = "osprov") -> None:
    structlog.configure(
        processors=[*_SHARED, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[*_SHARED, structlog.stdlib.ExtraAdder(), _temporal_context],
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.processors.format_exc_info,
                structlog.processors.JSONRenderer(),
            ],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for noisy in ("urllib3", "keystoneauth", "stevedore", "kubernetes.client.rest"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    structlog.contextvars.bind_contextvars(component=component)


def log(name: str = "osprov") -> Any:
    return structlog.get_logger(name)
