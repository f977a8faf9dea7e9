"""Benchmark: the kube emulator's hot paths, this checkout against a baseline revision, as ratios.

Each side runs its own emulator (the baseline from `git archive REV devenv`, on this venv) with the
Widget test CRD, and does the same work over HTTP: N creates; W watches from resourceVersion 0 (each
gets the N objects as ADDED events); full lists of the N objects; the same lists paged by 500; N/2
status merge patches while W watches are open (until every watch has every event); and the start-up,
process start to serving with the CEL-ruled CRD loaded. Printed: seconds
per phase on each side and this/baseline. No stack needed.

    .venv/bin/python -m bench.kube_emulator [--baseline main] [--objects 2000] [--watchers 10] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from io import BytesIO
from pathlib import Path

import aiohttp

REPO = Path(__file__).resolve().parents[1]
CRDS = REPO / "tests" / "kube" / "fixtures" / "crds"
BASE = "/apis/test.osprov.dev/v1"


@contextmanager
def emulator(tree: Path, workdir: Path) -> Iterator[str]:
    """Run `python -m devenv.kube` from `tree` (its devenv package first on the path)."""
    ready = workdir / "port"
    argv = [sys.executable, "-m", "devenv.kube", "--port", "0", "--ready-file", str(ready)]
    argv += ["--crds", str(CRDS), "--watch-window", "100000"]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    with open(workdir / "log", "wb") as log:
        proc = subprocess.Popen(
            argv, cwd=tree, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        deadline = time.monotonic() + 30
        while not ready.exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError((workdir / "log").read_text()[-2000:])
            time.sleep(0.02)  # polling for the ready file, bounded by the deadline
        yield f"http://127.0.0.1:{int(ready.read_text())}"
    finally:
        proc.terminate()
        proc.wait(10)


def widget(name: str) -> dict[str, object]:
    return {
        "apiVersion": "test.osprov.dev/v1",
        "kind": "Widget",
        "metadata": {"name": name},
        "spec": {"name": name},
    }


async def workload(url: str, objects: int, watchers: int) -> dict[str, float]:
    timings: dict[str, float] = {}
    limit = asyncio.Semaphore(32)
    collection = f"{url}{BASE}/widgets"
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=600)) as session:

        async def watch(rv: str, count: int) -> None:
            seen = 0
            params = {"watch": "1", "resourceVersion": rv, "timeoutSeconds": "600"}
            async with session.get(collection, params=params) as response:
                async for _line in response.content:
                    seen += 1
                    if seen == count:
                        return

        async def create(i: int) -> None:
            async with (
                limit,
                session.post(f"{url}{BASE}/namespaces/default/widgets", json=widget(f"w{i:05d}")) as r,
            ):
                assert r.status == 201, await r.text()

        started = time.perf_counter()
        await asyncio.gather(*(create(i) for i in range(objects)))
        timings["creates"] = time.perf_counter() - started

        started = time.perf_counter()
        await asyncio.gather(*(watch("0", objects) for _ in range(watchers)))
        timings["watch fan-out (initial)"] = time.perf_counter() - started

        started = time.perf_counter()
        for _ in range(10):
            async with session.get(collection) as response:
                assert len((await response.json())["items"]) == objects
        timings["10 full lists"] = time.perf_counter() - started

        started = time.perf_counter()
        for _ in range(10):
            token = ""
            while True:
                params = {"limit": "500", **({"continue": token} if token else {})}
                async with session.get(collection, params=params) as response:
                    token = (await response.json())["metadata"].get("continue", "")
                if not token:
                    break
        timings["10 paged lists"] = time.perf_counter() - started

        async def status(i: int) -> None:
            body = json.dumps(
                {"status": {"observedGeneration": 1, "conditions": [{"type": "Ready", "status": "True"}]}}
            )
            headers = {"Content-Type": "application/merge-patch+json"}
            path = f"{url}{BASE}/namespaces/default/widgets/w{i:05d}/status"
            async with limit, session.patch(path, data=body, headers=headers) as r:
                assert r.status == 200, await r.text()

        async with session.get(collection, params={"limit": "1"}) as response:
            rv = (await response.json())["metadata"]["resourceVersion"]
        started = time.perf_counter()
        watches = [asyncio.create_task(watch(rv, objects // 2)) for _ in range(watchers)]
        await asyncio.gather(*(status(i) for i in range(objects // 2)))
        await asyncio.gather(*watches)
        timings["status patches, watched"] = time.perf_counter() - started
    return timings


def baseline_tree(rev: str, into: Path) -> Path:
    archive = subprocess.run(
        ["git", "archive", rev, "devenv"], cwd=REPO, capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def measure(tree: Path, objects: int, watchers: int, repeat: int) -> dict[str, float]:
    best: dict[str, float] = {}
    for _ in range(repeat):
        started = time.perf_counter()
        with tempfile.TemporaryDirectory() as tmp, emulator(tree, Path(tmp)) as url:
            up = {"start-up to serving": time.perf_counter() - started}  # CEL-ruled CRD loaded
            for phase, seconds in (up | asyncio.run(workload(url, objects, watchers))).items():
                best[phase] = min(best.get(phase, seconds), seconds)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--baseline", default="main", help="git revision to compare with")
    parser.add_argument("--objects", type=int, default=2000)
    parser.add_argument("--watchers", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3, help="best of N runs per side")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = measure(baseline_tree(args.baseline, Path(tmp)), args.objects, args.watchers, args.repeat)
    this = measure(REPO, args.objects, args.watchers, args.repeat)
    print(f"{args.objects} objects, {args.watchers} watches, best of {args.repeat}; baseline {args.baseline}")
    print(f"{'phase':<24}{'baseline s':>12}{'this s':>10}{'ratio':>8}")
    for phase, seconds in this.items():
        print(f"{phase:<24}{base[phase]:>12.2f}{seconds:>10.2f}{seconds / base[phase]:>8.2f}")


if __name__ == "__main__":
    main()
