"""Batch decision reports: ``python -m workbook report [SCENARIO ...] [--out reports] [--jobs N]``.

For each scenario the report notebooks (the notebooks of ``notebooks/`` that declare a section in
their metadata, ``metadata.workbook.section``, in its ``order``: the decision first) run with
Papermill's Python API, the scenario as the ``scenario`` parameter, their ``widgets`` cells removed
before execution; their cells are then assembled into ONE self-contained HTML page per scenario (no
code, no widgets, static SVG charts, nothing loaded from a network), next to the executed notebooks
and ``summary.json`` (the ``estimate`` output plus report metadata). ``reports/index.html`` and
``index.csv`` list every scenario's headline.

- ``jobs``: the plain values handed to workers (``Job``) and back (``Result``).
- ``sections``: which notebooks make the report (their metadata) and the ``parameters`` check.
- ``assemble``: executed notebooks -> one offline HTML page, ``summary.json`` and the headline.
- ``inprocess``: the default Papermill engine, the notebooks run in the worker's own IPython shell.
- ``execute``: ``render_scenario``; the shared-kernel Papermill engine and this worker's kernels
  (``--engine kernel``, and where the in-process engine cannot run).
- ``pool``: the local process pool, and a worker ended by a notebook.
- ``command``: the ``report`` command's arguments; a report process without anywidget.
- ``batch``: sections from notebook metadata, planning (every check before a kernel starts), the
  atomic install, recovery, the index, and the ``report`` command.
"""
