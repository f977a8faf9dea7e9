"""A workflow for tests/worker/test_runner.py: a local activity, an activity and a signal, each with a
payload, so every kind of serialization context is asked for."""

from __future__ import annotations

from datetime import timedelta

from temporalio import activity, workflow


@activity.defn(name="runner_test.echo")
async def echo(text: str) -> str:
    return f"echo {text}"


@workflow.defn(name="RunnerTest")
class RunnerTestWorkflow:
    def __init__(self) -> None:
        self.heard: str | None = None

    @workflow.signal
    def hear(self, text: str) -> None:
        self.heard = text

    @workflow.run
    async def run(self, text: str) -> list[str]:
        timeout = timedelta(seconds=10)
        local = await workflow.execute_local_activity(
            echo, text, start_to_close_timeout=timeout, summary="a local echo"
        )
        remote = await workflow.execute_activity(
            echo, local, start_to_close_timeout=timeout, summary="an echo"
        )
        await workflow.wait_condition(lambda: self.heard is not None)
        assert self.heard is not None
        return [local, remote, self.heard]
