"""Pydantic validation errors as one line per problem, naming the file and the field (the scenario,
the portfolio and any other file validated by a pydantic model)."""
from __future__ import annotations

from pydantic import ValidationError

from .yamlsafe import EXCERPT_CHARS, excerpt, excerpt_text


def _fmt_loc(loc) -> str:
    return ".".join(str(p) for p in loc if not (isinstance(p, str) and p.startswith("function-")))


def _describe(err: dict) -> str:
    t, got = err["type"], err.get("input")
    ctx = err.get("ctx") or {}
    if t == "extra_forbidden":
        return "unknown key (not part of the scenario format; see data/scenario.schema.json)"
    if t == "missing":
        return "required key is missing"
    if t in ("float_parsing", "float_type", "int_parsing", "int_type", "int_from_float"):
        kind = "an integer" if t.startswith("int") else "a number"
        return f"expected {kind}, got {excerpt(got)}"
    if t in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        op = {"greater_than": ">", "greater_than_equal": ">=", "less_than": "<", "less_than_equal": "<="}[t]
        bound = next(iter(ctx.values()))
        return f"expected a number {op} {bound}, got {excerpt(got)}"
    if t == "literal_error":
        return f"expected {ctx.get('expected')}, got {excerpt(got)}"
    if t == "value_error":
        return excerpt_text(str(ctx.get("error", err["msg"])))
    return f"{err['msg']}, got {excerpt(got)}"


MAX_PROBLEMS = 30


def errors_to_lines(file: str, exc: ValidationError) -> list[str]:
    """One line per problem of a pydantic validation, each naming the file and the field."""
    lines = []
    for e in exc.errors():
        loc = excerpt_text(_fmt_loc(e["loc"]), EXCERPT_CHARS)
        lines.append(f"{file}: {loc + ': ' if loc else ''}{_describe(e)}")
    return lines

