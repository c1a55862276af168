"""Text for notebooks and reports: the scenario's heading as Markdown, not a quoted Python string."""
from __future__ import annotations

from .scenario import Scenario


def header_markdown(s: Scenario) -> str:
    """Title, description and the workload in one line, as Markdown."""
    w = s.workload
    what = w.model or ("custom architecture" if w.architecture is not None else "generic model")
    lines = [f"**{s.title}**", ""]
    if s.description:
        lines += [s.description.strip(), ""]
    lines.append(f"Scenario `{s.name}`: {w.task} of `{what}` in {w.precision} with {w.framework}.")
    return "\n".join(lines)


def header(s: Scenario):
    """The scenario's heading as an IPython Markdown object (renders in JupyterLab, Voila and reports)."""
    from IPython.display import Markdown

    return Markdown(header_markdown(s))
