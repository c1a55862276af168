"""The front door and the docs site: the README stays short and keeps the two commands, the site builds in
strict mode (a broken link or anchor fails), loads nothing from a CDN, and the commands it shows run.

Convention for code examples: a ```sh block in README.md or docs/**/*.md is executed, line by line, for
each line that starts with ``python -m workbook `` (a command, not ``workbook.app``) (so it must be fast and write nothing into the checkout);
a ```text block is shown only (long runs, network, commands that write data/)."""
from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from workbook import paths

ROOT = paths.ROOT
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


def _sh_commands() -> list[tuple[str, str]]:
    out = []
    for page in PAGES:
        for block in re.findall(r"^```sh\n(.*?)^```", page.read_text(), re.S | re.M):
            for line in block.splitlines():
                if line.startswith("python -m workbook "):
                    out.append((str(page.relative_to(ROOT)), line.split("  #")[0].strip()))
    return out


def test_the_readme_is_a_door_with_both_commands_on_its_first_screen():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) < 250
    head = "\n".join(lines[:60])
    assert "make report" in head and "make test" in head


def test_every_relative_link_of_the_readme_reaches_a_file():
    text = (ROOT / "README.md").read_text()
    links = [t.split("#")[0] for t in re.findall(r"\]\(([^)]+)\)", text) if not t.startswith(("http", "#"))]
    assert links and all((ROOT / t).exists() for t in links), [t for t in links if not (ROOT / t).exists()]


def test_the_docs_examples_cover_estimate_and_set():
    cmds = [c for _, c in _sh_commands()]
    assert any(c.startswith("python -m workbook estimate") for c in cmds)
    assert any("--set " in c for c in cmds)


@pytest.mark.parametrize("page,command", _sh_commands())
def test_a_command_shown_in_the_docs_runs(page, command, monkeypatch, capsys):
    """The command's own code (``workbook.cli.main``, what ``python -m workbook`` calls) in the test's
    process, from the checkout's root: a fresh interpreter per command cost about 2 s of CPU each (issue 30);
    the CLI's start in a process of its own is tested in tests/test_startup.py and tests/test_estimate.py."""
    from workbook import cli
    argv = shlex.split(command)
    assert argv[:3] == ["python", "-m", "workbook"], command
    monkeypatch.chdir(ROOT)
    rc = cli.main(argv[3:])
    err = capsys.readouterr().err
    assert rc in (0, 1), f"{page}: `{command}` exited {rc}: {err[-800:]}"
    assert "Traceback" not in err


@pytest.mark.slow
def test_the_site_builds_strict_offline_and_loads_nothing_remote(tmp_path):
    """The strict build of the site, into a temporary folder, or into ``$WORKBOOK_DOCS_SITE_DIR``: `make test`
    sets it to site/, so that this build is also `make docs`'s (one build instead of two; issue 30)."""
    pytest.importorskip("mkdocs")
    pytest.importorskip("material")
    site = Path(os.environ.get("WORKBOOK_DOCS_SITE_DIR") or tmp_path / "site")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    remote = re.compile(r"<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)=\"(?:https?:)?//", re.I)
    pages = list(site.rglob("*.html"))
    assert len(pages) >= 14
    assert not [p.name for p in pages if remote.search(p.read_text())]
    ref = (site / "reference" / "scenario.html").read_text()
    assert "workload.requests_per_s" in ref and "pricing.utilization" in ref      # generated from the schema
    assert "--markdown" in (site / "reference" / "cli.html").read_text()             # generated from argparse
    assert "price_basis" in (site / "reference" / "catalogs.html").read_text()       # from catalog.SCHEMAS


@pytest.mark.slow
def test_a_broken_link_fails_the_strict_build(tmp_path, monkeypatch):
    """The build `mkdocs build --strict` makes (mkdocs' own ``load_config`` and ``build``), in the test's process:
    a fresh interpreter cost about 3 s of CPU more for its imports than the build itself (issue 30); the site
    test above still starts the command."""
    pytest.importorskip("material")
    import logging

    from mkdocs.commands.build import build
    from mkdocs.config import load_config
    from mkdocs.exceptions import Abort

    shutil.copytree(DOCS, tmp_path / "docs", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    (tmp_path / "docs" / "index.md").write_text((DOCS / "index.md").read_text() + "\n[gone](no-such-page.md)\n")
    monkeypatch.setenv("NO_MKDOCS_2_WARNING", "1")
    monkeypatch.chdir(tmp_path)
    warnings = []

    class Keep(logging.Handler):
        def emit(self, record):
            warnings.append(record.getMessage())

    keep = Keep(logging.WARNING)
    logging.getLogger("mkdocs").addHandler(keep)
    try:
        config = load_config(config_file=str(tmp_path / "mkdocs.yml"), strict=True, site_dir=str(tmp_path / "site"))
        with pytest.raises(Abort, match="strict mode"):
            build(config)
    finally:
        logging.getLogger("mkdocs").removeHandler(keep)
    assert any("no-such-page.md" in w for w in warnings), warnings
