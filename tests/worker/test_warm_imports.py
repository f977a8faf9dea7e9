"""A worker loads what its activities call before it polls: no import inside a reconcile.

The kubernetes package imports its API classes on first use (CoreV1Api: ~0.4 s). A new worker that paid
that on its first Secret read did so inside a User's pass, on the path of every grant waiting for that user
(bench P1's profile, docs/benchmarks.md). A fresh interpreter shows what importing the activities loads.
"""

from __future__ import annotations

import subprocess
import sys

API_MODULES = ("core_v1_api", "custom_objects_api", "events_v1_api")


def test_importing_the_activities_loads_the_kubernetes_apis_they_call() -> None:
    probe = (
        "import sys\n"
        "import osprov.activities.all\n"
        f"for name in {API_MODULES!r}:\n"
        "    print(name, f'kubernetes.client.api.{name}' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    loaded = dict(line.split() for line in out.stdout.splitlines())
    assert loaded == {name: "True" for name in API_MODULES}
