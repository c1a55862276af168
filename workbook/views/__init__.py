"""For people: ``text`` (numbers, money, tables, headings, explanations and verdicts in words),
``charts`` (Altair charts as values) and ``widgets`` (one explorer per notebook). Nothing in
model/, cost/ or decision/ imports it; the notebooks reach it as ``wb.charts`` and ``wb.widgets``.

Nothing is imported here: ``workbook.views.text`` stays free of Altair and ipywidgets.
"""
