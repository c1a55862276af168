"""The package's layering (README "Architecture"): imports only go downward, every import is at the top
of its module, no module hides an import error of its own package, and no module is too long to read
in one sitting. Checked on the source with ``ast``, so a violation fails here before it bites."""
import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "workbook"
MAX_LINES = 600

# Each module's layer: a module may import only modules of a lower layer. Sub-package
# ``__init__`` modules take the layer of the highest module they import.
LAYERS = {
    "errors": 0, "paths": 0, "terms": 0, "jsontext": 0, "inputs": 0.5,
    "catalog": 1, "schemas": 0.9, "hf": 1, "names": 0,
    "yamlsafe": 0.7, "validation": 0.8, "scenario": 2, "prices": 2, "pricefeeds": 2.3, "azurefeed": 2.4, "pricesync": 2.5,
    "model.profile": 3, "model.comm": 3, "model.queueing": 3, "model.mamf": 3, "model.efficiency": 4, "model.dataparallel": 4.2, "model.moe": 4.8, "model.training": 5, "model.pick": 5.2, "model.search": 5.5,
    "model.memo": 1, "model.frames": 1, "model.replica": 4.5, "model.lengths": 4.6, "model.generic": 4.5, "model.disagg": 4.7, "model.serving": 5, "model.estimate": 6, "model.offers": 7, "model.tables": 7,
    "cost.rates": 3, "cost.hosting": 3, "cost.reliability": 3.5, "cost.energy": 3.5, "cost.location": 3.5, "cost.doubt": 3.5, "cost.pricebook": 3.7, "cost.goodput": 3.8, "cost.mcspares": 3.9, "cost.bill": 4, "cost.mcgroups": 4.5, "cost.breakeven": 5, "cost.uncertainty": 5,
    "decision.rules": 6, "decision.claim_checks": 6.5, "decision.rank": 7, "decision.evidence": 7, "decision.nearest": 7.5, "decision.balance": 7.5,
    "decision.recommend": 8, "decision.offers": 8,
    "calibrate.generic": 7.5, "calibrate.bands": 7.6, "calibrate.runs": 8, "calibrate.layouts": 8.2, "calibrate.cases": 8.3, "calibrate.own": 8.5, "calibrate.fit": 9, "calibrate.params": 9.1, "calibrate.command": 9.2,
    "analysis": 10, "diff": 10,
    "plan.portfolio": 10.2, "plan.demand": 10.3, "plan.optimise": 10.4, "plan.fleet": 10.5, "plan.output": 10.6,
    "plan.command": 17.5, "report.plan_page": 16, "views.charts.plan": 13,
    "views.text": 11, "views.buyer": 11.5, "views.charts.data": 11.9, "views.charts.converter": 11.8, "views.charts.base": 12, "views.charts.perf": 13, "views.charts.scaling": 13,
    "views.charts.cost": 13, "views.widgets": 14,
    "app.panels": 15, "app.page": 16, "app.server": 11, "app.__main__": 17, "netcheck": 0,
    "report.jobs": 11, "report.outfolder": 11,
    "report.sections": 11, "report.assemble": 15, "report.kernelside": 15, "report.kernellaunch": 15, "report.inprocess": 15.5, "report.execute": 16, "report.pool": 16.5, "report.batch": 17,
    "report.templatecache": 10.9, "report.nbschema": 10.95, "report.forkready": 11, "report.digest": 15.2, "report.command": 16.4,
    "cli": 98, "__init__": 99, "__main__": 99,
}
# pairs the layer numbers alone would allow but the architecture does not
FORBIDDEN = [
    ("cost.", "model."), ("cost.", "decision."),          # money knows prices and rows, not the model
    ("model.", "cost."), ("model.", "decision."),
    ("decision.", "model.estimate"), ("decision.", "model.training"), ("decision.", "model.serving"),
    ("decision.", "model.tables"), ("decision.", "model.efficiency"),
]


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).with_suffix("")
        parts = list(rel.parts)
        yield ".".join(parts), path


def _name_of(path: Path) -> str:
    return ".".join(path.relative_to(PACKAGE).with_suffix("").parts)


def _resolve(module: str, node: ast.ImportFrom | ast.Import) -> list[str]:
    """The workbook modules an import statement in ``module`` reaches (dotted, without 'workbook.')."""
    pkg = module.split(".")[:-1] if not module.endswith("__init__") else module.split(".")[:-1]
    out = []
    if isinstance(node, ast.Import):
        for a in node.names:
            if a.name == "workbook" or a.name.startswith("workbook."):
                out.append(a.name[len("workbook."):] or "__init__")
        return out
    if node.level == 0:
        if not (node.module or "").startswith("workbook"):
            return []
        base = (node.module or "")[len("workbook."):].split(".") if node.module != "workbook" else []
    else:
        base = pkg[: len(pkg) - (node.level - 1)] + ((node.module or "").split(".") if node.module else [])
    base = [b for b in base if b]
    for a in node.names:
        cand = base + [a.name]
        if (PACKAGE.joinpath(*cand).with_suffix(".py")).exists() or (PACKAGE.joinpath(*cand) / "__init__.py").exists():
            out.append(".".join(cand))
        else:
            out.append(".".join(base) if base else "__init__")
    return out


def _layer(name: str) -> int:
    if name in LAYERS:
        return LAYERS[name]
    if name.endswith(".__init__") or (PACKAGE / name.replace(".", "/") / "__init__.py").exists():
        pkg = name[: -len(".__init__")] if name.endswith(".__init__") else name
        inner = [v for k, v in LAYERS.items() if k.startswith(pkg + ".")]
        if inner:
            return max(inner)
    raise KeyError(name)


ALL = list(_modules())


@pytest.mark.parametrize("name,path", ALL, ids=[n for n, _ in ALL])
def test_every_module_has_a_layer(name, path):
    try:
        _layer(name)
    except KeyError:
        pytest.fail(f"workbook/{path.relative_to(PACKAGE)}: not in tests/test_layering.py LAYERS: give it a layer")


def test_imports_only_go_downward():
    bad = []
    for name, path in ALL:
        tree = ast.parse(path.read_text())
        mine = _layer(name)
        for node in tree.body:
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            for target in _resolve(name, node):
                if target == name or target == "__init__" and name.endswith("__init__"):
                    continue
                if _layer(target) >= mine and not name.endswith("__init__"):
                    bad.append(f"workbook/{path.relative_to(PACKAGE)}:{node.lineno}: {name} (layer {mine}) imports "
                               f"{target} (layer {_layer(target)})")
                for a, b in FORBIDDEN:
                    if name.startswith(a) and target.startswith(b):
                        bad.append(f"workbook/{path.relative_to(PACKAGE)}:{node.lineno}: {name} must not import {target}")
    assert not bad, "\n".join(bad)


def test_no_function_level_or_guarded_imports_of_the_package():
    bad = []
    for name, path in ALL:
        tree = ast.parse(path.read_text())
        top = set(id(n) for n in tree.body)
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in top and _resolve(name, node):
                bad.append(f"workbook/{path.relative_to(PACKAGE)}:{node.lineno}: import of the package inside a "
                           f"function or block")
            if isinstance(node, ast.Try):
                guarded = any(isinstance(n, (ast.Import, ast.ImportFrom)) and _resolve(name, n)
                              for b in node.body for n in ast.walk(b))
                catches = any(isinstance(h.type, ast.Name) and h.type.id in ("ImportError", "ModuleNotFoundError")
                              for h in node.handlers)
                if guarded and catches:
                    bad.append(f"workbook/{path.relative_to(PACKAGE)}:{node.lineno}: try/except ImportError "
                               f"around the package's own modules")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("name,path", ALL, ids=[n for n, _ in ALL])
def test_modules_stay_readable(name, path):
    n = len(path.read_text().splitlines())
    assert n <= MAX_LINES, f"workbook/{path.relative_to(PACKAGE)}: {n} lines (at most {MAX_LINES}): split it"
