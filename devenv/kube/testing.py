"""Run the emulator as a subprocess for tests: `run_emulator(tmp_dir)` and the `kube_emulator` fixture."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

START_DEADLINE_S = 15.0
STOP_DEADLINE_S = 5.0


@dataclass
class RunningEmulator:
    url: str
    kubeconfig: str
    pid: int
    log_path: str

    @property
    def kubectl_cache_dir(self) -> str:
        """kubectl caches discovery per host:port for hours; emulators of a test session reuse ports with
        other CRDs, so each emulator gets its own cache (KUBECACHEDIR)."""
        return str(Path(self.kubeconfig).parent / "kubectl-cache")

    def api_client(self) -> Any:
        """An official `kubernetes.client.ApiClient` for this emulator (plain http, no auth)."""
        from kubernetes import client

        configuration = client.Configuration()
        configuration.host = self.url
        return client.ApiClient(configuration)

    # --------------------------------------------------------------------------- fault injection
    def _admin(self, method: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            f"{self.url}/_emulator/faults",
            data=data,
            method=method,
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            result: dict[str, Any] = json.loads(response.read())
            return result

    def force_gone_on_next_watch(self, resource: str = "*") -> None:
        """The next watch of `resource` (plural, plural.group or "*") gets a 410 ERROR event."""
        self._admin("POST", {"action": "gone_on_next_watch", "resource": resource})

    def cut_watches(self, resource: str = "*") -> None:
        """End every open watch stream (of `resource`) the way a dropped connection would."""
        self._admin("POST", {"action": "cut_watches", "resource": resource})

    def inject(self, verb: str, resource: str, status: int, times: int = 1, delay_s: float = 0) -> None:
        """Answer the next `times` `verb` requests on `resource` with `status` (0: only delay) after `delay_s`.

        verb: get, list, watch, create, update, patch, delete or "*"; resource: plural, plural.group,
        "plural/status" (the status subresource only, as in RBAC) or "*".
        """
        self._admin(
            "POST",
            {
                "action": "inject",
                "verb": verb,
                "resource": resource,
                "status": status,
                "times": times,
                "delay_s": delay_s,
            },
        )

    def clear_faults(self) -> None:
        self._admin("DELETE")


@contextlib.contextmanager
def run_emulator(
    tmp_dir: str | os.PathLike[str],
    crds_dirs: Iterable[str | os.PathLike[str]] = (),
    watch_window: int = 1000,
    extra_args: Iterable[str] = (),
) -> Iterator[RunningEmulator]:
    tmp = Path(tmp_dir)
    tmp.mkdir(parents=True, exist_ok=True)
    ready = tmp / "kube-emulator.port"
    kubeconfig = tmp / "kubeconfig"
    log_path = tmp / "kube-emulator.log"
    ready.unlink(missing_ok=True)
    argv = [
        sys.executable,
        "-m",
        "devenv.kube",
        "--port",
        "0",
        "--ready-file",
        str(ready),
        "--kubeconfig",
        str(kubeconfig),
        "--watch-window",
        str(watch_window),
    ]
    for directory in crds_dirs:
        argv += ["--crds", str(directory)]
    argv += list(extra_args)
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + START_DEADLINE_S
        while not ready.exists():
            if proc.poll() is not None:
                raise RuntimeError(
                    f"kube emulator exited with {proc.returncode}: {log_path.read_text()[-2000:]}"
                )
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"kube emulator not ready after {START_DEADLINE_S}s: {log_path.read_text()[-2000:]}"
                )
            time.sleep(0.02)  # polling a file for readiness, bounded by the deadline above
        port = int(ready.read_text())
        yield RunningEmulator(f"http://127.0.0.1:{port}", str(kubeconfig), proc.pid, str(log_path))
    finally:
        stop(proc)


def stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the emulator's own process group (recorded PID), SIGKILL after a deadline."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=STOP_DEADLINE_S)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=STOP_DEADLINE_S)


try:
    import pytest
except ImportError:  # pragma: no cover - pytest is a dev dependency only
    pytest = None  # type: ignore[assignment]

if pytest is not None:

    @pytest.fixture
    def kube_emulator(tmp_path: Path) -> Iterator[RunningEmulator]:
        """A fresh emulator per test (no CRDs loaded; create them through the API or use run_emulator)."""
        with run_emulator(tmp_path) as emulator:
            yield emulator
