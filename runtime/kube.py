"""Kubernetes client configuration, the same for every process: in-cluster, else $KUBECONFIG."""

from __future__ import annotations

import os
import threading

from kubernetes import client, config

_lock = threading.Lock()
_configured = False


def load_config() -> None:
    """Configure the client once per process (in-cluster service account, else the kubeconfig)."""
    global _configured
    with _lock:
        if _configured:
            return
        try:
            config.load_incluster_config()  # type: ignore[no-untyped-call]
        except config.ConfigException:
            config.load_kube_config(config_file=os.environ.get("KUBECONFIG") or None)  # type: ignore[no-untyped-call]
        _configured = True


def api_client(user_agent: str) -> client.ApiClient:
    """A new ApiClient naming its caller in the apiserver's audit log (clients are not thread-safe)."""
    load_config()
    api = client.ApiClient()
    api.user_agent = user_agent
    return api
