"""KeystoneSweep: one workflow per Keystone deployment that finds drift for every converged object at once.

  tick (the shortest resync period reported) | scan: one list per reported kind, one login per
                                             | managed password, the operator's policy recomputed
  an object's report differs from Keystone   | wake that object's workflow (SIGNAL_RESYNC): a full step
  the object's workflow is gone              | forget its report
  nothing differs                            | nothing: no signal, no answer, no status write

Reports arrive as signals (api/sweep.py) and are only recorded; the scan reads them with a query, so the
history holds one timer and one activity per tick however many objects there are.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import FailureError

with workflow.unsafe.imports_passed_through():
    from osprov.api import sweep as sw
    from osprov.api.sweep import Forget, Report, Scan, SweepInput, SweepState, Swept
    from osprov.workflows.calls import call
    from osprov.workflows.entity import ACTIVITY_FAILED, failure_message

MAX_TICKS_PER_RUN = 200


@workflow.defn(name=sw.WORKFLOW_TYPE)
class KeystoneSweepWorkflow:
    def __init__(self) -> None:
        self.s: SweepState | None = None
        self._early: dict[str, Swept | None] = {}  # reports that arrived with the start
        self._run_ticks = 0

    @workflow.signal(name=sw.SIGNAL_REPORT)
    def report(self, report: Report) -> None:
        self._record(report.swept.key.path, report.swept)

    @workflow.signal(name=sw.SIGNAL_FORGET)
    def forget(self, forget: Forget) -> None:
        self._record(forget.path, None)

    def _record(self, path: str, swept: Swept | None) -> None:
        table = self.s.swept if self.s is not None else None
        if table is None:
            self._early[path] = swept
        elif swept is None:
            table.pop(path, None)
        else:
            table[path] = swept

    @workflow.query(name=sw.QUERY_SWEPT)
    def swept(self) -> SweepState | None:
        return self.s

    def period(self) -> float:
        assert self.s is not None
        return min((x.period_seconds for x in self.s.swept.values()), default=sw.DEFAULT_PERIOD_SECONDS)

    @workflow.run
    async def run(self, inp: SweepInput) -> str:
        self.s = inp.carried or SweepState(keystone=inp.keystone)
        for path, swept in self._early.items():
            self._record(path, swept)
        self._early.clear()
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
        period, empty = self.period(), not self.s.swept

        def woken() -> bool:
            return bool(self.s and self.s.swept) and (empty or self.period() < period)

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
        workflow.set_current_details(f"scanning {len(s.swept)} Keystone objects")
        try:
            result = await call(
                sw.SCAN,
                Scan(sweep_workflow_id=workflow.info().workflow_id),
                summary=f"compare {len(s.swept)} reports with Keystone (one list per kind)",
                timeout=timedelta(minutes=5),
            )
        except ACTIVITY_FAILED as err:  # Keystone down: the next tick tries again
            workflow.logger.warning("drift scan failed", extra={"error": failure_message(err)})
            return
        for drift in result.drifted:
            swept = s.swept.get(drift.path)
            if swept is None:
                continue
            try:
                await workflow.get_external_workflow_handle(swept.workflow_id).signal(
                    sw.SIGNAL_RESYNC, drift.reason
                )
            except FailureError:  # its workflow is gone: nothing converges it any more
                s.swept.pop(drift.path, None)
        workflow.set_current_details(
            f"{len(s.swept)} Keystone objects; last scan: {len(result.drifted)} drifted"
        )
