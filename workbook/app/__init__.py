"""The stakeholder app: ``python -m workbook.app`` (``__main__``: the Voila launcher) serves
notebooks/app.ipynb, whose one cell is ``app(scenario)`` from ``page`` (the page's state: controls
<-> scenario overrides, recompute); ``panels`` draws each tab from an ``Analysis``.

Nothing is imported here, so that the launcher starts without ipywidgets or Altair.
"""
