"""`make test`'s order of files (tests/conftest.py): the longest files first, then the rest in collection
order, the tests of each file in their own order."""
import importlib.util
from pathlib import Path
from types import SimpleNamespace

# tests/conftest.py by its path (the name ``conftest`` may be another folder's conftest in a whole run)
_spec = importlib.util.spec_from_file_location("tests_conftest", Path(__file__).with_name("conftest.py"))
conftest = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(conftest)


def test_every_file_run_first_exists_once(root):
    assert len(set(conftest.RUN_FIRST)) == len(conftest.RUN_FIRST)
    assert [f for f in conftest.RUN_FIRST if not (root / f).is_file()] == []


def test_listed_files_go_first_in_their_order_and_each_file_keeps_its_order():
    listed_late, listed_early = conftest.RUN_FIRST[3], conftest.RUN_FIRST[0]
    ids = ["tests/a.py::t1", f"{listed_late}::x1", "tests/b.py::t1", "tests/a.py::t2", f"{listed_early}::y1",
           f"{listed_late}::x2", "notebooks/01.ipynb::Cell 0", "tests/b.py::t2", "notebooks/01.ipynb::Cell 1"]
    items = [SimpleNamespace(nodeid=i) for i in ids]
    conftest.pytest_collection_modifyitems(None, items)
    assert [i.nodeid for i in items] == [
        f"{listed_early}::y1", f"{listed_late}::x1", f"{listed_late}::x2",
        "tests/a.py::t1", "tests/a.py::t2", "tests/b.py::t1", "tests/b.py::t2",
        "notebooks/01.ipynb::Cell 0", "notebooks/01.ipynb::Cell 1"]
