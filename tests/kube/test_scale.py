"""The emulator copes with the benchmark's load: 2,000 objects created concurrently, many watches."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import aiohttp

from devenv.kube.testing import run_emulator

from .conftest import FIXTURES, GROUP, PLURAL, VERSION, widget

OBJECTS, WATCHERS = 2000, 10


async def test_two_thousand_creates_reach_every_watch_in_order(tmp_path: Path) -> None:
    with run_emulator(tmp_path, crds_dirs=[FIXTURES / "crds"], watch_window=5000) as running:
        base = f"{running.url}/apis/{GROUP}/{VERSION}"
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=120)) as session:
            async with session.get(f"{base}/{PLURAL}") as response:
                start_rv = (await response.json())["metadata"]["resourceVersion"]

            async def watch() -> list[int]:
                rvs: list[int] = []
                params = {"watch": "1", "resourceVersion": start_rv, "timeoutSeconds": "100"}
                async with session.get(f"{base}/{PLURAL}", params=params) as response:
                    async for line in response.content:
                        rvs.append(int(json.loads(line)["object"]["metadata"]["resourceVersion"]))
                        if len(rvs) == OBJECTS:
                            break
                return rvs

            watches = [asyncio.create_task(watch()) for _ in range(WATCHERS)]
            limit = asyncio.Semaphore(32)

            async def create(i: int) -> int:
                async with (
                    limit,
                    session.post(f"{base}/namespaces/default/{PLURAL}", json=widget(f"w{i}")) as response,
                ):
                    return response.status

            statuses = await asyncio.gather(*(create(i) for i in range(OBJECTS)))
            assert set(statuses) == {201}
            results = await asyncio.wait_for(asyncio.gather(*watches), 60)
            for rvs in results:
                assert len(rvs) == OBJECTS and rvs == sorted(rvs) and len(set(rvs)) == OBJECTS
            async with session.get(f"{base}/{PLURAL}") as response:
                assert len((await response.json())["items"]) == OBJECTS
