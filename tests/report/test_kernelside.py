"""What the report runner does inside its kernel (``report.kernelside``) and how a batch kernel draws
charts (``views.charts.base.static_bundle``, ``slim_spec``): the same namespace reset as ``%reset -f``
and the same SVG as Altair's own renderer, only cheaper. Shells here are private ``InteractiveShell``
objects, not the process-wide singleton, so other tests see no IPython shell."""
import gc

import altair as alt
import pandas as pd
import pytest
from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config

from workbook.report import kernelside
from workbook.report.pool import longest_first
from workbook.views.charts import base, converter


@pytest.fixture
def shell():
    threshold = gc.get_threshold()
    sh = InteractiveShell(config=Config({"HistoryManager": {"enabled": False}}))
    yield sh
    gc.set_threshold(*threshold)


def test_reset_namespace_is_reset_f_without_a_full_collection(shell, monkeypatch):
    magic = InteractiveShell(config=Config({"HistoryManager": {"enabled": False}}))
    for sh in (magic, shell):
        sh.run_cell("x = 41\nx + 1", silent=True)
        sh.run_cell("y = x + 1")
        assert sh.user_ns["y"] == 42
    magic.run_line_magic("reset", "-f")
    calls = []
    monkeypatch.setattr(gc, "collect", lambda generation=2: calls.append(generation) or 0)
    kernelside.reset_namespace(shell)
    assert "x" not in shell.user_ns and "y" not in shell.user_ns
    assert set(shell.user_ns) == set(magic.user_ns)
    assert shell.execution_count == 1
    assert calls == []                       # %reset -f would have run two full collections
    assert gc.collect(0) == 0 and calls == [0]  # and gc.collect is given back


def test_reset_namespace_numbers_cells_from_one_in_a_new_history_session(capsys):
    sh = InteractiveShell(config=Config({"HistoryManager": {"hist_file": ":memory:"}}))
    for _ in range(2):
        for code in ("a = 1", "b = 2"):
            sh.run_cell(code, store_history=True)
        sh.history_manager.writeout_cache()
        kernelside.reset_namespace(sh)
        assert sh.execution_count == 1
    assert "not unique" not in capsys.readouterr().out   # IPython's complaint, which reached a report


def _chart(extra_columns: bool = True) -> alt.Chart:
    df = pd.DataFrame({"name": ["a", "b", "c"], "value": [3.0, 1.0, 2.0], "order": [2, 0, 1]})
    if extra_columns:
        df["unused"] = ["x" * 50] * 3
    return alt.Chart(df).mark_bar().encode(x="value:Q", y=alt.Y("name:N", sort=alt.EncodingSortField("order"))
                                           ).transform_calculate(double="datum.value * 2")


def test_prepare_draws_charts_as_altairs_svg_renderer_does(shell, monkeypatch):
    monkeypatch.setenv("FONTCONFIG_FILE", str(converter.FONTS_CONF))   # restored after the test
    kernelside.prepare(shell)
    assert gc.get_threshold()[0] == kernelside.GC_THRESHOLD_0
    chart = _chart()
    data, _ = shell.display_formatter.format(chart)
    assert data["image/svg+xml"] == chart._repr_mimebundle_()["image/svg+xml"]
    assert data["text/plain"] == repr(chart)


def test_slim_spec_keeps_only_the_columns_the_chart_reads():
    spec = _chart().to_dict()
    rows = next(iter(base.slim_spec(spec)["datasets"].values()))
    assert set(rows[0]) == {"name", "value", "order"}
    assert base.slim_spec(_chart(extra_columns=False).to_dict()) == _chart(extra_columns=False).to_dict()


@pytest.mark.parametrize("spec", [
    {"transform": [{"fold": ["a", "b"]}], "mark": "bar", "datasets": {"d": [{"a": 1, "b": 2, "c": 3}]}},
    {"mark": "bar", "encoding": {"x": {"field": "a.b"}}, "datasets": {"d": [{"a": 1, "c": 3}]}},
    {"mark": "bar", "params": [{"name": "p", "select": "point"}], "datasets": {"d": [{"a": 1, "c": 3}]}},
    {"mark": "bar", "transform": [{"filter": "datum[name] > 1"}], "datasets": {"d": [{"a": 1, "c": 3}]}},
    {"mark": "bar", "encoding": {"x": {"aggregate": {"argmax": "c"}, "field": "a"}}, "datasets": {"d": [{"a": 1, "c": 3}]}},
    {"mark": "bar", "encoding": {"tooltip": {"content": "data"}}, "datasets": {"d": [{"a": 1, "c": 3}]}},
])
def test_slim_spec_leaves_what_it_cannot_follow_alone(spec):
    assert base.slim_spec(spec) is spec


def test_static_bundle_draws_the_same_svg_from_the_slimmed_data_and_memoises_it():
    base._SVG_MEMO.clear()
    chart = _chart()
    first = base.static_bundle(chart)
    assert first == chart._repr_mimebundle_()
    assert len(base._SVG_MEMO) == 1
    assert base.static_bundle(_chart()) == first and len(base._SVG_MEMO) == 1


def test_longest_first_orders_jobs_by_their_last_report(tmp_path):
    import json
    from types import SimpleNamespace

    for name, secs in (("short", [1.0, 2.0]), ("long", [5.0, 4.0])):
        (tmp_path / name).mkdir()
        (tmp_path / name / "summary.json").write_text(json.dumps(
            {"report": {"notebooks": [{"duration_s": s} for s in secs]}}))
    jobs = [SimpleNamespace(scenario=n) for n in ("short", "new", "long")]
    assert [j.scenario for j in longest_first(jobs, tmp_path)] == ["new", "long", "short"]


def test_longest_first_falls_back_on_the_durations_this_machine_remembers(tmp_path, monkeypatch):
    """A batch writing into a new folder (a scheduled run into a dated folder) still orders its jobs by
    how long each scenario's last report took on this machine (``pool.remember_durations``)."""
    import json
    from types import SimpleNamespace

    from workbook.report import pool
    from workbook.report.jobs import Result

    monkeypatch.setenv("WORKBOOK_CACHE_DIR", str(tmp_path / "cache"))
    jobs = [SimpleNamespace(scenario=n) for n in ("short", "new", "long")]
    assert [j.scenario for j in longest_first(jobs, tmp_path / "out")] == ["short", "new", "long"]

    def done(name, secs):
        summary = json.dumps({"report": {"notebooks": [{"duration_s": s} for s in secs]}})
        return Result(scenario=name, ok=True, files={"summary.json": summary.encode()})

    pool.remember_durations([done("short", [1.0, 0.5]), done("long", [3.0, 2.0]),
                             Result(scenario="new", ok=False, error="x")])
    assert json.loads((tmp_path / "cache" / pool.DURATIONS_FILE).read_text()) == {"long": 5.0, "short": 1.5}
    assert [j.scenario for j in longest_first(jobs, tmp_path / "out")] == ["new", "long", "short"]
    pool.remember_durations([done("short", [9.0])])   # the newest run wins, the others are kept
    assert [j.scenario for j in longest_first(jobs, tmp_path / "out")] == ["new", "short", "long"]
    (tmp_path / "cache" / pool.DURATIONS_FILE).write_text("[not a mapping")
    assert [j.scenario for j in longest_first(jobs, tmp_path / "out")] == ["short", "new", "long"]


def test_vendored_fonts_only_points_vl_convert_at_no_system_font(monkeypatch):
    monkeypatch.delenv("FONTCONFIG_FILE", raising=False)
    assert converter.vendored_fonts_only()
    import os

    conf = converter.FONTS_CONF.read_text()
    assert os.environ["FONTCONFIG_FILE"] == str(converter.FONTS_CONF)
    assert "<dir>/dev/null/" in conf          # a folder that cannot exist: fontdb loads no system font
    monkeypatch.setenv("FONTCONFIG_FILE", "/etc/fonts/fonts.conf")
    assert not converter.vendored_fonts_only()    # the user's own setting wins
    assert os.environ["FONTCONFIG_FILE"] == "/etc/fonts/fonts.conf"


# --- the layer hash of views.charts.base.Chart, the kernel's launcher, vl-convert's warm-up ----------

def _layered(cls, frame):
    return cls(frame).mark_line().encode(x="a:Q", y="b:Q") + cls(frame).mark_point().encode(x="a:Q", y="b:Q")


def test_layered_chart_spec_is_altairs_own():
    frame = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [3.0, 1.0, 2.0], "unused": ["x", "y", "z"]})
    ours = _layered(base.Chart, frame).to_dict(validate=True)
    altairs = _layered(alt.Chart, frame).to_dict(validate=True)
    assert ours == altairs


def test_frame_digest_follows_the_values_and_columns():
    f = pd.DataFrame({"a": [1, 2], "b": ["x", "y"]})
    assert base.frame_digest(f) == base.frame_digest(f.copy())
    assert base.frame_digest(f) != base.frame_digest(f.assign(a=[1, 3]))
    assert base.frame_digest(f) != base.frame_digest(f.rename(columns={"b": "c"}))
    assert base.frame_digest(pd.DataFrame({"a": [[1], [2]]})) is None   # lists: Altair's own hash is used
    assert base.frame_digest({"values": []}) is None
    same_but_other_data = [base.Chart(d).mark_point().encode(x="a:Q")._compute_hash()
                           for d in (f, f.assign(a=[5, 6]))]
    assert same_but_other_data[0] != same_but_other_data[1] and all(h.startswith("view_") for h in same_but_other_data)


def test_warm_converter_starts_vl_convert(monkeypatch):
    import vl_convert

    started = []
    monkeypatch.setattr(vl_convert, "warm_up_workers", lambda: started.append(True))
    kernelside.warm_converter()
    assert started == [True]
    monkeypatch.setattr(vl_convert, "warm_up_workers", lambda: 1 / 0)
    kernelside.warm_converter()   # a converter that fails is left to the first chart to report


def test_report_kernel_starts_without_debugpy_and_anywidget(tmp_path):
    import json

    from workbook.report import execute

    km = execute._start_kernel("python3", str(tmp_path), None)
    try:
        assert km.kernel_spec.argv[1:3] == ["-m", "workbook.report.kernellaunch"]
        from jupyter_core.utils import run_sync

        kc = km.client()
        kc.start_channels()
        run_sync(kc.wait_for_ready)(timeout=60)
        out = []
        code = ("import sys, json, altair; print(json.dumps([sys.modules.get(n) is None for n in "
                "('debugpy', 'anywidget')] + [altair.JupyterChart.__module__, 'ipykernel' in sys.modules]))")
        run_sync(kc.execute_interactive)(code, timeout=60, output_hook=lambda m: out.append(
            m["content"].get("text", "")) if m["msg_type"] == "stream" else None)
        kc.stop_channels()
        assert json.loads("".join(out)) == [True, True, "altair.jupyter", True]   # the stand-in JupyterChart
    finally:
        execute._stop_kernel(km)
