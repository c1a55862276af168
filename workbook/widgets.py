"""Every ipywidgets control of the workbook lives here (style: one module builds controls from the
current scenario so their starting values equal the report's, wires them with
``interactive_output``, and reuses the package's model and chart functions; sliders use
``continuous_update=False``; no global state).

Notebooks call one function per view, e.g. ``wb.widgets.profile_explorer(s)``; in batch runs
(Papermill, ``interactive=False``) notebooks skip these cells, and the report drops cells tagged
``widgets``.
"""
from __future__ import annotations

import ipywidgets as W

# --- section: profile & comparison (notebooks 01, 02) ---
# --- end: profile & comparison ---

# --- section: scaling (notebook 03) ---
# --- end: scaling ---

# --- section: cost & decision (notebooks 04, 05) ---
# --- end: cost & decision ---

# --- section: app (the stakeholder app) ---
# --- end: app ---
