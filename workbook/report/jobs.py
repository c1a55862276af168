"""The plain, picklable values that cross the process (or Dask) boundary of a batch: a ``Job`` goes to
a worker, a ``Result`` comes back. Nothing here imports from the workbook."""
from __future__ import annotations

import os
from dataclasses import dataclass, field

CELL_TIMEOUT_S = 600.0   # every cell of a batch has a limit (a report once hung 14.6 min on one cell)
# How a worker runs the notebooks: "in-process" (``report.inprocess``: an IPython shell in the worker,
# the default) or "kernel" (a Jupyter kernel per worker, ``report.execute``; also where the in-process
# engine cannot run: a thread other than the main one, as Dask's, or no SIGALRM)
ENGINES = ("in-process", "kernel")
ENGINE_ENV = "WORKBOOK_REPORT_ENGINE"
BATCH_ENV = "WORKBOOK_REPORT_BATCH"   # set to 1 while a report run renders (``command.run``)


_HELD: list[bool] = []   # True while ``hold_collector`` keeps the garbage collector off


def hold_collector() -> None:
    """Turn the garbage collector off (when on) until ``release_collector``: for the runner of a report
    rendered in its own process, from its start to its batch shell (``inprocess._freeze_imports``, which
    freezes what the imports made, then releases), as the pool's forkserver imports (``command.
    preload_without_collections``). The collections the imports and the plan would trigger walk a heap
    that only grows (one report: about 300 young, 27 middle and 2 full collections before the shell,
    0.17-0.20 s of CPU at load 4, issue 30, branch s13-imports); everything they would keep is frozen at
    the shell anyway."""
    import gc

    if gc.isenabled() and not _HELD:
        gc.disable()
        _HELD.append(True)


def release_collector() -> None:
    """The garbage collector on again if ``hold_collector`` turned it off (else nothing)."""
    import gc

    if _HELD:
        _HELD.clear()
        gc.enable()


def default_engine() -> str:
    """``WORKBOOK_REPORT_ENGINE`` when it names an engine, else "in-process"."""
    value = os.environ.get(ENGINE_ENV, "").strip()
    return value if value in ENGINES else ENGINES[0]


@dataclass(frozen=True)
class Job:
    """Everything a worker needs to render one scenario (plain, picklable values)."""

    scenario: str  # the scenario's name (output folder)
    parameter: str  # the value passed as ``scenario`` (a shipped name, or an absolute path)
    scenario_file: str
    notebook_dir: str
    sections: tuple[tuple[str, str, str], ...]  # (key, notebook file name, label) in report order
    missing: tuple[str, ...]  # labels of the sections whose notebook does not exist
    inputs_sha256: str
    title: str = ""
    timeout_s: float = CELL_TIMEOUT_S   # per cell, and for the estimate run in the kernel
    kernel_name: str = "python3"
    engine: str = ENGINES[0]   # one of ENGINES


@dataclass
class Result:
    """What a worker hands back: the files of a finished report, or the error that stopped it."""

    scenario: str
    ok: bool
    title: str = ""
    files: dict[str, bytes] = field(default_factory=dict)  # name -> content (report folder)
    error: str | None = None  # one line: notebook, cell, exception
    error_detail: dict | None = None
    duration_s: float = 0.0
    notes: list[str] = field(default_factory=list)
    # the headline of the report's summary.json (``assemble.headline``), read by the index: the runner
    # need not parse the summary (up to 3 MB of JSON) again to get it
    headline: dict | None = None
