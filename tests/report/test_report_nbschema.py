"""``report.nbschema``: nbformat's notebook validator from code compiled once and kept (not compiled again
in every report process), with the same verdicts; nbformat's private cache of validators, which it
fills, checked so that an nbformat release changing it fails here."""
from __future__ import annotations

import copy
import sys

import fastjsonschema
import nbformat
import nbformat.v4 as v4
import pytest
from nbformat import json_compat
from nbformat import validator as nbv

from workbook.report import nbschema, templatecache


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    """No validator in nbformat's cache, the kept code in a folder of the test's own."""
    monkeypatch.setattr(templatecache, "PACKAGE_COMPILED_DIR", tmp_path / "__pycache__" / "compiled")
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    monkeypatch.setattr(nbv, "validators", {})
    monkeypatch.delenv("NBFORMAT_VALIDATOR", raising=False)
    return tmp_path / "__pycache__" / "compiled"


def _bad_notebooks():
    good = v4.new_notebook(cells=[v4.new_markdown_cell("# t"), v4.new_code_cell("1 + 1")])
    yield "good", good
    nb = v4.new_notebook(cells=[v4.new_code_cell("x")])
    nb.cells[0]["cell_type"] = "bogus"
    yield "bogus cell type", nb
    nb = v4.new_notebook(cells=[v4.new_code_cell("x")])
    nb.cells[0]["unknown_field"] = True
    yield "extra property", nb
    nb = v4.new_notebook(cells=[v4.new_code_cell("x")])
    nb.cells[0]["outputs"] = [nbformat.from_dict({"output_type": "stream", "name": "stdout"})]
    yield "stream without text", nb
    nb = v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": 3}
    yield "kernelspec without display name", nb


def _verdict(nb) -> str:
    try:
        nbformat.validate(nb)
    except Exception as e:  # noqa: BLE001 - the verdict is what is compared
        return f"{type(e).__name__}: {e}"
    return "valid"


def test_installed_validator_is_the_one_nbformat_hands_out_and_judges_the_same(fresh):
    assert nbschema.install()
    kept = nbv.get_validator(4, v4.nbformat_minor)
    assert type(kept).__name__ == "KeptValidator" and isinstance(kept, json_compat.FastJsonSchemaValidator)
    assert nbv.get_validator() is kept and nbv.get_validator(4, v4.nbformat_minor, relax_add_props=False) is kept
    assert not nbschema.install()                        # installed once
    # the schema nbformat itself would compile (private: an nbformat release that changes it fails here)
    assert nbschema.schema_v4(v4.nbformat_minor) == nbv._get_schema_json(v4, version=4,
                                                                           version_minor=v4.nbformat_minor)
    notebooks = list(_bad_notebooks())                   # one set (random cell ids), a copy per check
    with_kept = {name: _verdict(copy.deepcopy(nb)) for name, nb in notebooks}
    nbv.validators.clear()                               # nbformat's own, freshly compiled
    own = nbv.get_validator(4, v4.nbformat_minor)
    assert type(own) is json_compat.FastJsonSchemaValidator
    assert {name: _verdict(copy.deepcopy(nb)) for name, nb in notebooks} == with_kept
    assert with_kept["good"] == "valid" and all(v != "valid" for k, v in with_kept.items() if k != "good")


def test_the_root_function_is_the_one_fastjsonschema_compiles():
    schema = nbschema.schema_v4(v4.nbformat_minor)
    source = fastjsonschema.compile_to_code(schema)
    assert nbschema._ROOT_FUNCTION.search(source).group(1) == fastjsonschema.compile(schema).__name__


def test_kept_code_is_loaded_not_compiled_and_a_corrupt_file_is_compiled_again(fresh, monkeypatch):
    assert nbschema.install()
    files = list(fresh.glob("nbformat-schema-*.marshal"))
    assert len(files) == 1
    nbv.validators.clear()

    def no_compiling(*a, **k):
        raise AssertionError("compiled again")

    with monkeypatch.context() as m:
        m.setattr(fastjsonschema, "compile_to_code", no_compiling)
        assert nbschema.install()                        # loaded from the kept code
        assert _verdict(v4.new_notebook()) == "valid"
    files[0].write_bytes(b"garbage")
    nbv.validators.clear()
    assert nbschema.install() and _verdict(v4.new_notebook()) == "valid"
    assert files[0].read_bytes() != b"garbage"           # compiled and kept again


def test_nothing_installed_for_another_validator_library(fresh, monkeypatch):
    monkeypatch.setenv("NBFORMAT_VALIDATOR", "jsonschema")
    assert not nbschema.install() and not nbv.validators


def test_unwritable_cache_still_gives_the_validator(tmp_path, monkeypatch):
    (tmp_path / "file").write_text("not a folder")
    monkeypatch.setattr(templatecache, "PACKAGE_COMPILED_DIR", tmp_path / "file" / "compiled")
    monkeypatch.setenv("WORKBOOK_CACHE_DIR", str(tmp_path / "file"))
    monkeypatch.setattr(nbv, "validators", {})
    monkeypatch.delenv("NBFORMAT_VALIDATOR", raising=False)
    assert nbschema.install() and _verdict(v4.new_notebook()) == "valid"
