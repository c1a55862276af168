"""Compiled Jinja templates kept between processes (``template_cache``), for the report's templates:
nbconvert's HTML templates and the package's own (``workbook/templates``)."""
from __future__ import annotations

import functools
import hashlib
import os
import sys
from pathlib import Path

from .. import paths

TEMPLATE_CACHE_DIR = "templates"   # compiled Jinja templates, in ``paths.cache_dir()`` (the fallback)
# compiled code kept with the package, in its ``__pycache__`` folder beside Python's own bytecode: ignored
# by git, by the package data (``templates/*/*`` would ship a folder under ``templates``) and by the
# inputs digest and the calibration table's key (neither reads ``__pycache__``)
PACKAGE_COMPILED_DIR = paths.PACKAGE_DIR / "__pycache__" / "compiled"


def _writable(folder: Path) -> bool:
    """Could this process make or write ``folder``: its nearest existing ancestor is writable."""
    for p in (folder, *folder.parents):
        if p.exists():
            return p.is_dir() and os.access(p, os.W_OK)
    return False


def cache_folder() -> Path:
    """Where compiled templates (and nbformat's compiled validator, ``nbschema``) go:
    ``PACKAGE_COMPILED_DIR`` (the package's ``__pycache__/compiled``) when this process may write there,
    as Python writes a module's bytecode beside it; else ``$WORKBOOK_CACHE_DIR/templates`` (a read-only
    install, or ``PYTHONDONTWRITEBYTECODE`` / ``-B``: the process asked for no bytecode beside the sources).

    Compiled code depends only on the installed templates, libraries and Python (``template_cache`` and
    ``nbschema`` key it so), not on the user or the scenario, so it need not start cold with every new
    cache folder: a first report with an empty ``$WORKBOOK_CACHE_DIR`` (a new user, a CI job,
    ``bench_report``) compiled nbconvert's and the page's templates again, about 0.1 s of CPU per process."""
    own = PACKAGE_COMPILED_DIR
    if not sys.dont_write_bytecode and _writable(own):
        return own
    return paths.cache_dir() / TEMPLATE_CACHE_DIR


def _passed(functions: dict) -> list[tuple[str, str]]:
    """Each filter's (or test's) name and what it asks Jinja to pass it first (its ``jinja_pass_arg``, set by
    ``pass_context``, ``pass_eval_context`` or ``pass_environment``; "None" for nothing)."""
    return sorted((name, str(getattr(f, "jinja_pass_arg", None))) for name, f in functions.items())


@functools.lru_cache(maxsize=1)
def template_cache():
    """Jinja's bytecode cache for the report's templates (nbconvert's and ``workbook/templates``), in
    ``cache_folder()`` (the package's ``__pycache__/compiled``, else ``$WORKBOOK_CACHE_DIR/templates``): a
    process's first report compiled nbconvert's HTML templates and its own (about 0.15-0.2 s of Jinja's parser and code generator, then Python's compiler); with
    the cache it loads their code objects, as Python's ``__pycache__`` spares recompiling modules.

    Jinja keys a template's file by name and path and checks the source's checksum (an edited
    template is compiled again); the key here also holds what else the generated code depends on:
    the Python and Jinja versions and the environment's syntax, whitespace, autoescape (for that
    template) and extension settings, and the names of its filters and tests with what each asks to be
    passed (``pass_context`` and the like: Jinja's compiler writes a filter's call with or without the
    context as the filter registered at compile time asks, so code compiled while ``markdown2html`` took
    no context, from another nbconvert or a patched exporter, would call today's without it and fail),
    so two environments never share code compiled for the other.
    A missing, unreadable, corrupt or unwritable cache only costs the compilation (never an error)."""
    import jinja2
    from jinja2.bccache import Bucket, FileSystemBytecodeCache

    class TemplateCache(FileSystemBytecodeCache):
        def __init__(self):
            super().__init__(directory="", pattern="%s.jinja")

        def get_bucket(self, environment, name, filename, source):
            env = environment
            auto = env.autoescape(name) if callable(env.autoescape) else env.autoescape
            fingerprint = repr((sys.version, jinja2.__version__, name, filename, bool(auto), env.block_start_string,
                                env.block_end_string, env.variable_start_string, env.variable_end_string,
                                env.comment_start_string, env.comment_end_string, env.line_statement_prefix,
                                env.line_comment_prefix, env.trim_blocks, env.lstrip_blocks, env.newline_sequence,
                                env.keep_trailing_newline, env.optimized, env.is_async, sorted(env.extensions),
                                getattr(env.finalize, "__qualname__", env.finalize),
                                _passed(env.filters), _passed(env.tests)))
            bucket = Bucket(environment, hashlib.sha256(fingerprint.encode()).hexdigest()[:40],
                            self.get_source_checksum(source))
            self.load_bytecode(bucket)
            return bucket

        def _get_cache_filename(self, bucket) -> str:
            return str(cache_folder() / (self.pattern % (bucket.key,)))

        def load_bytecode(self, bucket) -> None:
            try:
                super().load_bytecode(bucket)
            except Exception:  # noqa: BLE001 - a corrupt file (its checksum unreadable): compile
                bucket.reset()

        def dump_bytecode(self, bucket) -> None:
            try:
                cache_folder().mkdir(parents=True, exist_ok=True)
                super().dump_bytecode(bucket)
            except Exception:  # noqa: BLE001 - read-only or full: the compiled template stands
                pass

    return TemplateCache()
