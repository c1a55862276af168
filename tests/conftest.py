import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# vl-convert measures text with its vendored font in every test process, as in a report process
# (``views.charts.base.vendored_fonts_only``, whose file this is): its converter starts once per process
# and keeps the fonts it started with, so the tests that compare drawings or text widths
# (tests/views/test_chart_labels.py) failed when an earlier test of the same worker had drawn a chart
# with the system's fonts. Browsers the tests launch get the environment without it
# (tests/app/browser_helpers.py).
from workbook.paths import VL_CONVERT_FONTS_CONF  # noqa: E402 - after the path above

os.environ.setdefault("FONTCONFIG_FILE", str(VL_CONVERT_FONTS_CONF))

# Input files of tests, not tests: `make test` runs nbval (--nbval-lax) in the same pytest as tests/,
# which would otherwise collect these notebooks as tests.
collect_ignore = ["fixtures"]

# The files that take longest, longest first: CPU seconds of the file's tests (the worker's own and its
# reaped child processes': servers, kernels, browsers, subprocesses) plus the seconds its worker's
# process tree sat idle (sleeps, polls, a culler's timer), from one `pytest -n 2 --dist loadfile` run of
# the whole suite on a shared 2-core machine (2 December 2026, branch s9-tests; wall seconds of a loaded
# machine say more about the other processes than about the file, CPU and idle do not). `make test` runs
# whole files per worker (--dist loadfile, for their module fixtures: servers, browsers, fits) in
# collection order (--no-loadscope-reorder: xdist's default order, most tests first, left the one-test
# heavy files for the end, one worker busy for minutes while the other idled); starting with the
# longest and ending with the many short ones (and the notebooks, collected last) is the
# longest-processing-time-first rule, which keeps the workers busy to the end. A file not listed keeps
# its place after these; the order changes no test's outcome.
RUN_FIRST = [
    "tests/app/test_app_browser.py",                # 89 s CPU: Voila, two chromiums, JupyterLab
    "tests/app/test_app_kernel_cap.py",             # 30 s CPU + about 40 s idle: waits for the culler
    "tests/cost/test_cost_rates.py",                # 65 s CPU: 150 random fleets, Poisson tails of large means
    "tests/report/test_report_execute.py",          # 24 s CPU + about 25 s idle: three 8 s cell timeouts
    "tests/calibrate/test_calibration.py",          # 42 s CPU: the calibration refit
    "tests/app/test_app_security.py",               # 38 s CPU: five page loads, each a notebook run
    "tests/cost/test_resolve_equivalence.py",       # 27 s CPU: 180 pandas reference resolutions
    "tests/report/test_report_real.py",             # about 20 s CPU in a process pool: two real reports
    "tests/report/test_report_faults.py",           # 13 s CPU + waits for killed batches' kernels
    "tests/app/test_app_updates.py",                # 14 s CPU: fresh analyses after each control
    "tests/test_docs.py",                           # 14 s CPU: two strict site builds
    "tests/test_invariants.py",                     # 13 s CPU: property-based, the whole pipeline
    "tests/app/test_app_own_runs.py",               # 11 s CPU
    "tests/report/test_report_batch.py",            # 11 s CPU
    "tests/test_estimate.py",                       # 10 s CPU: `estimate --json` processes
    "tests/cost/test_cost_bill.py",                 # 10 s CPU
    "tests/report/test_inprocess.py",               # 9 s CPU
    "tests/report/test_report_exit.py",             # about 7 s wall: a pooled batch, eight interpreters
    "tests/plan/test_portfolio.py",                 # 9 s CPU
]


def pytest_collection_modifyitems(config, items):
    """Longest files first (``RUN_FIRST``), every other file after them in collection order; the tests
    of a file keep their order."""
    rank = {f: i for i, f in enumerate(RUN_FIRST)}
    first_seen = {}
    for i, item in enumerate(items):
        first_seen.setdefault(item.nodeid.split("::", 1)[0], i)
    items.sort(key=lambda it: (rank.get(f := it.nodeid.split("::", 1)[0], len(rank)), first_seen[f]))


@pytest.fixture
def root() -> Path:
    return ROOT


@pytest.fixture
def write_yaml(tmp_path):
    """Write a scenario YAML text to a temp file and return its path."""
    def _write(text: str, name: str = "s.yaml") -> Path:
        p = tmp_path / name
        p.write_text(text)
        return p
    return _write


@pytest.fixture(scope="session")
def analysed():
    """``analysed(name, n_draws=...)``: the analysis of a shipped scenario, computed once per test
    process (``analysis.shared_analyse``) and handed to each test as its own deep copy. For tests that
    read an unchanged shipped scenario; a test that patches the model calls ``analysis.analyse``."""
    from workbook import analysis, load_scenario

    def get(name: str, n_draws: int = analysis.MC_DRAWS, seed: int = 0):
        return analysis.shared_analyse(load_scenario(name), n_draws, seed)
    return get
