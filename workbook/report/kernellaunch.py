"""The report kernel's entry point (``python -m workbook.report.kernellaunch -f CONNECTION_FILE``):
ipykernel's own launcher (``ipykernel_launcher``), less two packages a batch kernel never uses.

- ``debugpy``: ipykernel imports it at start for its debugger (a batch kernel is never debugged);
- ``anywidget``: Altair imports it (and ipywidgets through it) for ``alt.JupyterChart``, the live
  chart of the app; a report draws static SVG and runs no ``widgets`` cell.

Both are marked absent (``sys.modules[name] = None``): ipykernel then runs without its debugger, as
where debugpy is not installed, and Altair defines its stand-in ``JupyterChart`` that says
anywidget is missing. Measured: 0.08-0.15 s less CPU per kernel start (0.39-0.42 s against
0.47-0.59 s, three interleaved pairs), and about 0.07 s less when the kernel imports Altair.
``execute._start_kernel`` uses it when the notebook's kernel spec is ipykernel's launcher.
"""
import sys
from pathlib import Path

UNUSED = ("debugpy", "anywidget")


def main() -> None:
    # as ipykernel_launcher: the kernel's folder off sys.path while ipykernel loads (IPython puts it back)
    if sys.path and (sys.path[0] == "" or Path(sys.path[0]) == Path.cwd()):
        del sys.path[0]
    for name in UNUSED:
        sys.modules.setdefault(name, None)
    from ipykernel import kernelapp

    kernelapp.launch_new_instance()


if __name__ == "__main__":
    main()
