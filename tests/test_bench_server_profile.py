"""bench/server_profile.py: the dev server's stripped Go binary named from its own function table, and a
perf sample charged to the RPC or queue task that spent it."""

from __future__ import annotations

import struct
from functools import cache

from bench.server_profile import GoSymbols, attribute, classify, samples
from devenv.config import project_bin


@cache
def temporal() -> GoSymbols:
    return GoSymbols(project_bin("temporal").resolve())


def entry_point() -> int:
    """The ELF header's entry address: the Go runtime's first instruction, `_rt0_<arch>_linux`."""
    with project_bin("temporal").resolve().open("rb") as binary:
        return int(struct.unpack_from("<Q", binary.read(0x20), 0x18)[0])


def test_the_entry_point_is_named_from_the_function_table() -> None:
    # A table whose text start the loader fills in (0 in the file) placed every name 0x401000 too low:
    # the entry point was then named after an unrelated protobuf function.
    name = temporal().name_at(entry_point())
    assert name.startswith("_rt0_") and name.endswith("_linux"), name


def test_a_function_address_maps_back_to_its_name() -> None:
    symbols = temporal()
    for name in (
        "go.temporal.io/server/service/history.(*visibilityQueueTaskExecutor).Execute",
        "runtime.gcBgMarkWorker",
    ):
        address = symbols.address_of(name)
        assert symbols.name_at(address) == name
        assert symbols.name_at(address + 1) == name  # inside the function, not only at its entry


def test_perf_file_offsets_go_through_the_loaded_segment() -> None:
    symbols = temporal()
    entry = entry_point()
    offset = next(entry - vaddr + off for off, size, vaddr in symbols.loads if vaddr <= entry < vaddr + size)
    assert symbols.at_file_offset(offset) == symbols.name_at(entry)


HANDLER = (
    "go.temporal.io/server/api/historyservice/v1._HistoryService_SignalWithStartWorkflowExecution_Handler"
)
UPSERT = "go.temporal.io/server/service/history.(*visibilityQueueTaskExecutor).processUpsertExecution"
QUEUE = "go.temporal.io/server/service/history/queues.(*executableImpl).Execute"


def test_the_outermost_rpc_handler_takes_the_sample() -> None:
    # innermost first, as perf prints a stack
    assert classify(["modernc.org/sqlite/lib._sqlite3VdbeExec", HANDLER, "runtime.goexit"]) == (
        "HistoryService.SignalWithStartWorkflowExecution"
    )


def test_a_queue_task_is_charged_to_its_kind_not_to_the_queue() -> None:
    assert classify(["modernc.org/sqlite/lib._sqlite3VdbeExec", UPSERT, QUEUE, "runtime.goexit"]) == (
        "visibility: upsert"
    )
    assert classify(["go.temporal.io/server/service/history/queues.(*SliceImpl).splitByRange", QUEUE]) == (
        "other history queues"
    )


def test_the_collector_the_runtime_and_the_rest() -> None:
    assert classify(["runtime.scanobject", "runtime.gcBgMarkWorker", "runtime.goexit"]) == "Go GC"
    assert classify(["runtime.copystack", "runtime.newstack", "runtime.morestack"]) == (
        "Go runtime: stacks and scheduling"
    )
    assert (
        classify(["[kernel] clear_page_erms", "runtime.memclrNoHeapPointers"]) == "kernel, outside the above"
    )
    assert classify(["runtime.memmove", "encoding/json.Marshal"]) == "other"


PERF_SCRIPT = """
\t          95fc1 [unknown] (/venv/bin/temporal)
\t          95fc2 [unknown] (/venv/bin/temporal)

\tffffffff8a0001 clear_page_erms ([kernel.kallsyms])
\t          95fc1 [unknown] (/venv/bin/temporal)

"""


def test_samples_name_the_binarys_frames_by_offset_and_keep_the_kernels() -> None:
    names = {0x95FC1: UPSERT, 0x95FC2: QUEUE}
    stacks = list(samples(PERF_SCRIPT, names.__getitem__))
    assert stacks == [[UPSERT, QUEUE], ["[kernel] clear_page_erms", UPSERT]]


def test_attribute_counts_each_sample_once() -> None:
    class Fake(GoSymbols):
        def __init__(self) -> None:
            pass

        def at_file_offset(self, offset: int) -> str:
            return {0x95FC1: UPSERT, 0x95FC2: QUEUE}[offset]

    assert attribute(PERF_SCRIPT, Fake()) == {"visibility: upsert": 2}
