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


def usd(x) -> str:
    """Money for people: $1.23B, $1.23M, $45,600, $2.13, $0.213; "n/a" for a blank."""
    try:
        x = float(x)
    except (TypeError, ValueError):
        return "n/a"
    if x != x or x in (float("inf"), float("-inf")):
        return "n/a"
    a = abs(x)
    if a >= 1e9:
        return f"${x / 1e9:.2f}B"
    if a >= 1e6:
        return f"${x / 1e6:.2f}M"
    if a >= 100:
        return f"${x:,.0f}"
    if a >= 1:
        return f"${x:,.2f}"
    return f"${x:.3g}"


def number(x) -> str:
    """A figure for people: 3 significant digits, thousands separators, scientific only beyond 1e6."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return str(x)
    if v != v:  # NaN
        return ""
    a = abs(v)
    if a == 0:
        return "0"
    if a >= 1e6 or a < 1e-3:
        return f"{v:.3g}"
    if a >= 100:
        return f"{v:,.0f}"
    return f"{v:.3g}"


def table_html(df) -> str:
    """DataFrame as HTML for notebooks, reports and the app: readable numbers, and no 0, 1, 2 ...
    index column when the index carries no information (a RangeIndex)."""
    import pandas as pd

    show_index = not (isinstance(df.index, pd.RangeIndex) and df.index.name is None)
    return df.to_html(index=show_index, float_format=number, na_rep="", border=0, notebook=True)


def register_table_formatter() -> bool:
    """In IPython (JupyterLab, Voila, Papermill kernels), show every DataFrame with ``table_html``."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    ip = get_ipython()
    if ip is None:
        return False
    import pandas as pd

    ip.display_formatter.formatters["text/html"].for_type(pd.DataFrame, table_html)
    return True
