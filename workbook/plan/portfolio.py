"""The portfolio file: several workloads (each a scenario file) over a horizon of months.

One YAML document (``data/portfolios/*.yaml``, described in data/README.md) names the horizon and,
for each workload, the scenario it runs, the months it runs in, the daily load curve of a service
(``hourly_load``) or how often a training job repeats (``repeat_every_months``). Unknown keys are
errors, and every problem is one line naming the file and the field (the scenario files' style).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

from pydantic import Field, ValidationError, field_validator, model_validator

from .. import paths
from ..errors import InputError
from ..scenario import Scenario, Strict, load_scenario, title_defaults_to_name
from ..validation import MAX_PROBLEMS, errors_to_lines
from ..yamlsafe import excerpt, read_yaml_file

PORTFOLIO_DIR = paths.DATA_DIR / "portfolios"
MAX_MONTHS = 120            # ten years: a sanity limit on the horizon, not a sourced fact
MAX_WORKLOADS = 32
MAX_LOAD_SHARE = 10.0       # an hour's load at most 10x the scenario's requests_per_s (sanity limit)
Month = Annotated[int, Field(ge=1, le=MAX_MONTHS)]
Share = Annotated[float, Field(ge=0, le=MAX_LOAD_SHARE)]


class PortfolioWorkload(Strict):
    """One workload of the portfolio: a scenario and the months it runs in."""

    scenario: str = Field(description="a shipped scenario id (data/scenarios/ID.yaml) or a YAML path "
                                      "relative to the portfolio file")
    start_month: Month = Field(1, description="first month it runs (1 = the horizon's first month)")
    end_month: Month | None = Field(None, description="last month it runs (default: the horizon's last)")
    hourly_load: list[Share] | None = Field(
        None, description="serving only: 24 shares of the scenario's requests_per_s, hour 0 to 23 of the day; "
                          "default: 1 for the scenario's hours_per_day")
    repeat_every_months: Month | None = Field(
        None, description="training and fine-tuning only: a job starts every this many months from start_month "
                          "to end_month; default: one job, in start_month")

    @field_validator("hourly_load")
    @classmethod
    def _24_hours(cls, v):
        if v is not None and len(v) != 24:
            raise ValueError(f"expected 24 shares (hours 0 to 23), got {len(v)}")
        if v is not None and not any(x > 0 for x in v):
            raise ValueError("expected at least one hour with a share above 0")
        return v

    @model_validator(mode="after")
    def _order(self):
        if self.end_month is not None and self.end_month < self.start_month:
            raise ValueError(f"end_month ({self.end_month}) is before start_month ({self.start_month})")
        return self


class Portfolio(Strict):
    """A horizon of ``months`` and the workloads that run in it."""

    name: str = Field(description="id: lower-case letters, digits and '-', equal to the file name")
    title: str | None = None
    description: str | None = None
    months: Month = Field(description="the horizon in months of 730 h (terms.HOURS_PER_MONTH)")
    workloads: list[PortfolioWorkload] = Field(min_length=1, max_length=MAX_WORKLOADS)

    @field_validator("name")
    @classmethod
    def _slug(cls, v: str) -> str:
        if not re.fullmatch(r"[a-z0-9][a-z0-9-]{0,63}", v):
            raise ValueError(f"expected lower-case letters, digits and '-', got {v!r}")
        return v

    @model_validator(mode="before")
    @classmethod
    def _title_defaults_to_name(cls, data):
        return title_defaults_to_name(data)

    @model_validator(mode="after")
    def _within_horizon(self):
        for i, w in enumerate(self.workloads):
            for key in ("start_month", "end_month"):
                v = getattr(w, key)
                if v is not None and v > self.months:
                    raise ValueError(f"workloads.{i}.{key}: month {v} is after the horizon (months: {self.months})")
        return self


def resolve_portfolio(name_or_path: str | Path) -> Path:
    """A portfolio id (a file in data/portfolios without .yaml) or a path to a YAML file."""
    p = Path(name_or_path)
    if p.suffix in (".yaml", ".yml") or "/" in str(name_or_path) or len(str(p)) > 255 or p.exists():
        return p
    return PORTFOLIO_DIR / f"{name_or_path}.yaml"


def _read(path: Path, rel: str):
    data = read_yaml_file(path, "a portfolio YAML file (data/portfolios/ID.yaml or a path)", rel)
    if not isinstance(data, dict):
        raise InputError(f"{rel}: expected a mapping of keys (name, title, months, workloads), "
                         f"got {type(data).__name__}")
    return data


def scenario_path(ref: str, folder: Path) -> Path:
    """A workload's ``scenario``: a shipped id, or a path relative to the portfolio's folder."""
    if "/" in ref or ref.endswith((".yaml", ".yml")):
        if not ref.endswith((".yaml", ".yml")):
            raise InputError(f"{excerpt(ref)}: expected a scenario id or the path of a .yaml file")
        p = Path(ref)
        return p if p.is_absolute() else (folder / p).resolve()
    return paths.SCENARIO_DIR / f"{ref}.yaml"


def _workload_problems(w: PortfolioWorkload, s: Scenario, where: str) -> list[str]:
    out = []
    if w.hourly_load is not None and s.is_training:
        out.append(f"{where}.hourly_load: only for serving; scenario {s.name!r} is {s.workload.task} "
                   "(use repeat_every_months)")
    if w.repeat_every_months is not None and not s.is_training:
        out.append(f"{where}.repeat_every_months: only for training and fine-tuning; scenario {s.name!r} is "
                   "inference (use hourly_load)")
    return out


def load_portfolio(name_or_path: str | Path) -> tuple[Portfolio, list[Scenario]]:
    """Read and validate a portfolio and every scenario it names; ``InputError`` lists every problem,
    one line each, naming the portfolio file and the field (a scenario's own problems follow its path)."""
    path = resolve_portfolio(name_or_path)
    rel = paths.rel(path)
    data = _read(path, rel)
    try:
        pf = Portfolio.model_validate(data)
    except ValidationError as exc:
        raise InputError("", errors_to_lines(rel, exc)[:MAX_PROBLEMS]) from None
    problems, scenarios = [], []
    for i, w in enumerate(pf.workloads):
        where = f"{rel}: workloads.{i}"
        try:
            s = load_scenario(scenario_path(w.scenario, path.parent))
        except InputError as e:
            problems += [f"{where}.scenario: {line}" for line in e.problems]
            continue
        problems += _workload_problems(w, s, where)
        scenarios.append(s)
    if problems:
        raise InputError("", problems)
    return pf, scenarios


def portfolio_names() -> list[str]:
    """The shipped portfolios (files in data/portfolios/)."""
    return sorted(p.stem for p in PORTFOLIO_DIR.glob("*.yaml"))
