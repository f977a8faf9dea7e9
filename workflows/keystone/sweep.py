"""KeystoneSweep: one workflow per Keystone deployment that finds drift for every converged object at once.

  tick (the shortest resync period reported) | scan: one list per reported kind, one login per
                                             | managed password, the operator's policy recomputed
  an object's report differs from Keystone   | wake that object's workflow (SIGNAL_RESYNC): a full step
  the object's workflow is gone              | forget its report (in its shard, or the lead's own table)
  a lead's own report a shard holds too      | drop it: the object reports to its shard now
  nothing differs                            | nothing: no signal, no answer, no status write

Reports arrive as signals at their shard (KeystoneSweepShard, api/sweep.py), which only records them and
tells the lead its shortest period when that changes; the scan reads them with a query per shard, so
the lead's history holds one timer and one activity per tick however many objects there are, and no
workflow's state holds more than one shard's reports. The lead's own table holds what older workers
reported to it before the shards; it empties as those objects report again.
"""

from __future__ import annotations

import contextlib
from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import FailureError

with workflow.unsafe.imports_passed_through():
    from osprov.api import sweep as sw
    from osprov.api.sweep import Forget, Report, Scan, ShardInput, SweepInput, SweepState, Swept, Wake
    from osprov.workflows import patches
    from osprov.workflows.calls import call, call_local
    from osprov.workflows.entity import ACTIVITY_FAILED, failure_message

MAX_TICKS_PER_RUN = 200
WAKE_RETRY = timedelta(seconds=60)  # a shard whose wake of the lead failed tries again after this


class ReportTable:
    """What the lead and its shards share: reports and forgets recorded by path, read with QUERY_SWEPT."""

    def __init__(self) -> None:
        self.s: SweepState | None = None
        self._early: dict[str, Swept | None] = {}  # reports that arrived with the start

    @workflow.signal(name=sw.SIGNAL_REPORT)
    def report(self, report: Report) -> None:
        self._record(report.swept.key.path, report.swept)

    @workflow.signal(name=sw.SIGNAL_FORGET)
    def forget(self, forget: Forget) -> None:
        self._record(forget.path, None)

    def _record(self, path: str, swept: Swept | None) -> None:
        if self.s is None:
            self._early[path] = swept
        elif swept is None:
            self.s.swept.pop(path, None)
        else:
            self.s.swept[path] = swept

    @workflow.query(name=sw.QUERY_SWEPT)
    def swept(self) -> SweepState | None:
        return self.s

    def _take_early(self) -> None:
        """Record the reports that arrived before the run's state existed."""
        for path, swept in self._early.items():
            self._record(path, swept)
        self._early.clear()


@workflow.defn(name=sw.WORKFLOW_TYPE)
class KeystoneSweepWorkflow(ReportTable):
    def __init__(self) -> None:
        super().__init__()
        self._wakes: list[Wake] = []  # shards' wakes that arrived with the start
        self._run_ticks = 0

    @workflow.signal(name=sw.SIGNAL_WAKE)
    def wake(self, wake: Wake) -> None:
        if self.s is None:
            self._wakes.append(wake)
        elif not patches.patched(sw.PATCH_SHARDS):
            return  # recorded by a worker from before the shards, which had no handler: it was dropped
        elif wake.period_seconds is None:
            self.s.shards.pop(wake.shard, None)
        else:
            self.s.shards[wake.shard] = wake.period_seconds

    def period(self) -> float:
        assert self.s is not None
        periods = [*(x.period_seconds for x in self.s.swept.values()), *self.s.shards.values()]
        return min(periods, default=sw.DEFAULT_PERIOD_SECONDS)

    def _reported(self) -> bool:
        return bool(self.s and (self.s.swept or self.s.shards))

    @workflow.run
    async def run(self, inp: SweepInput) -> str:
        self.s = inp.carried or SweepState(keystone=inp.keystone)
        self._take_early()
        for wake in self._wakes:
            self.wake(wake)
        self._wakes.clear()
        while True:
            if not await self._sleep():
                continue
            await self.tick()
            if workflow.info().is_continue_as_new_suggested() or self._run_ticks >= MAX_TICKS_PER_RUN:
                await workflow.wait_condition(workflow.all_handlers_finished)
                workflow.continue_as_new(SweepInput(keystone=self.s.keystone, carried=self.s))

    async def _sleep(self) -> bool:
        """Wait one period; False when woken early (the first report, or one asking for a shorter period:
        the wait starts again with the new period). Nothing reported: wait for a report."""
        assert self.s is not None
        period, empty = self.period(), not self._reported()

        def woken() -> bool:
            return self._reported() and (empty or self.period() < period)

        try:
            await workflow.wait_condition(
                woken,
                timeout=None if empty else timedelta(seconds=period),
                timeout_summary="next drift scan of the converged Keystone objects",
            )
        except TimeoutError:
            return True
        return False

    async def tick(self) -> None:
        s = self.s
        assert s is not None
        s.ticks += 1
        self._run_ticks += 1
        # Every shard is read, not only those that said they hold reports: a wake an older lead dropped (in
        # a rolling upgrade) must not hide a shard, and the scan's answer corrects the periods.
        queue = workflow.info().task_queue
        shards = [sw.shard_workflow_id(s.keystone, queue, n) for n in range(sw.SHARDS)]
        workflow.set_current_details("scanning the Keystone objects' reports")
        try:
            result = await call(
                sw.SCAN,
                Scan(sweep_workflow_id=workflow.info().workflow_id, shards=shards),
                summary="compare the shards' reports with Keystone (one list per kind)",
                timeout=timedelta(minutes=5),
            )
        except ACTIVITY_FAILED as err:  # Keystone down: the next tick tries again
            workflow.logger.warning("drift scan failed", extra={"error": failure_message(err)})
            return
        s.shards = dict(result.periods)
        for path in result.stale:
            s.swept.pop(path, None)
        for drift in result.drifted:
            workflow_id = drift.workflow_id or (
                s.swept[drift.path].workflow_id if drift.path in s.swept else ""
            )
            if not workflow_id:
                continue
            try:
                await workflow.get_external_workflow_handle(workflow_id).signal(
                    sw.SIGNAL_RESYNC, drift.reason
                )
            except FailureError:  # its workflow is gone: nothing converges it any more
                await self._forget(drift.path, drift.table)
        workflow.set_current_details(
            f"{result.checked} Keystone objects in {len(s.shards)} shards; last scan: {len(result.drifted)} drifted"
        )

    async def _forget(self, path: str, table: str) -> None:
        assert self.s is not None
        if not table:
            self.s.swept.pop(path, None)
            return
        with contextlib.suppress(FailureError):  # the shard is gone: so is the report
            await workflow.get_external_workflow_handle(table).signal(
                sw.SIGNAL_FORGET, Forget(keystone=self.s.keystone, path=path)
            )


@workflow.defn(name=sw.SHARD_WORKFLOW_TYPE)
class KeystoneSweepShardWorkflow(ReportTable):
    """Holds the reports of the objects whose path hashes to this shard; tells the lead its shortest period
    whenever that changes (None: it holds none), so the lead knows when and how often to scan. No timer:
    an idle shard writes no event."""

    def __init__(self) -> None:
        super().__init__()
        self.told: float | None = None  # the summary the lead was last sent

    def summary(self) -> float | None:
        assert self.s is not None
        return min((x.period_seconds for x in self.s.swept.values()), default=None)

    @workflow.run
    async def run(self, inp: ShardInput) -> str:
        self.s = inp.carried or SweepState(keystone=inp.keystone)
        self._take_early()
        self.told = inp.told
        while True:
            await workflow.wait_condition(
                lambda: self.summary() != self.told or workflow.info().is_continue_as_new_suggested()
            )
            summary = self.summary()
            if summary != self.told:
                wake = Wake(keystone=self.s.keystone, shard=inp.shard, period_seconds=summary)
                try:
                    await call_local(
                        sw.WAKE, wake, summary="tell the lead sweep this shard's shortest period"
                    )
                    self.told = summary
                except ACTIVITY_FAILED as err:  # Temporal unreachable: the reports stay, telling is retried
                    workflow.logger.warning(
                        "cannot wake the lead sweep", extra={"error": failure_message(err)}
                    )
                    await workflow.sleep(WAKE_RETRY, summary="tell the lead sweep again")
            if workflow.info().is_continue_as_new_suggested():
                await workflow.wait_condition(workflow.all_handlers_finished)
                workflow.continue_as_new(
                    ShardInput(keystone=self.s.keystone, shard=inp.shard, carried=self.s, told=self.told)
                )
