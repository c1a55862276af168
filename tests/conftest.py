import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# Input files of tests, not tests: `make test` runs nbval (--nbval-lax) in the same pytest as tests/,
# which would otherwise collect these notebooks as tests.
collect_ignore = ["fixtures"]

# The files that take longest (wall seconds per file of one `pytest -n 2 --dist loadfile tests` run on a
# loaded 2-core machine, 2 December 2026; "~": that figure scaled by the file's CPU ratio after branch
# s8-suitetests ran its commands in-process, which also took test_prices_azure.py, test_scenario.py,
# views/test_output_words.py and test_catalog.py below 38 s), longest first. `make test` runs whole files per worker
# (--dist loadfile, for their module fixtures: servers, browsers, fits) in collection order
# (--no-loadscope-reorder: xdist's default order, most tests first, left the one-test heavy files for
# the end, one worker busy for minutes while the other idled); starting with the longest and ending
# with the many short ones is the longest-processing-time-first rule, which keeps both workers busy
# to the end. A file not listed keeps its place after these; the order changes no test's outcome.
RUN_FIRST = [
    "tests/app/test_app_browser.py",                # 324 s: Voila, chromium, JupyterLab
    "tests/test_invariants.py",                     # 171 s: property-based, the whole pipeline
    "tests/report/test_report_execute.py",          # 134 s: kernels, a cell timeout
    "tests/calibrate/test_calibration.py",          # 134 s: the calibration refit
    "tests/app/test_app_kernel_cap.py",             # 120 s: mostly waiting for the culling (little CPU)
    "tests/report/test_report_faults.py",           # 109 s
    "tests/app/test_app_security.py",               # 105 s
    "tests/app/test_app_updates.py",                # 74 s
    "tests/app/test_app_own_runs.py",               # 67 s
    "tests/report/test_report_real.py",             # 60 s
    "tests/test_docs.py",                           # ~54 s: two strict site builds (commands in-process: s8-suitetests)
    "tests/plan/test_portfolio.py",                 # 52 s
    "tests/cost/test_cost_bill.py",                 # 50 s
    "tests/prices/test_prices_refresh.py",          # ~41 s (was 150 s; the CLI in-process: s8-suitetests)
    "tests/test_estimate.py",                       # ~40 s (was 62 s; one run per scenario: s8-suitetests)
    "tests/report/test_report_batch.py",            # 38 s
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
