"""``python -m workbook.app``: the stakeholder app, one notebook (``notebooks/app.ipynb``) served by Voila.

What it does, and why each option is set (see ``docs/app.md`` for exposing it on a network):

* serves exactly one notebook, fixed here and resolved from the package (never from the cwd or a
  URL): Voila then has no file browser, no ``/voila/render/<any notebook>`` and no contents API;
* ``file_allowlist=[]`` and ``file_denylist=['.*']``: ``/voila/files/...`` serves no file of the
  server's folder;
* binds to 127.0.0.1 unless ``--ip`` says otherwise; no token by default (loopback only), a
  generated or given token with ``--token`` / ``WORKBOOK_APP_TOKEN``;
* ``show_tracebacks=False``: a failing cell never sends a traceback to the browser (the app's own
  widgets catch expected errors and show them as sentences);
* ``preheat_kernel=True``: one kernel has already run the notebook when the first visitor arrives
  (the stack notes measured first render ~5 s cold, ~1.7 s preheated); the pool's next kernel
  starts once that visitor's page has connected to its kernel, not while the page loads
  (``fill_delay=0`` and ``server.CullingKernelManager.start_kernel``);
* the ``workbook`` Voila template (``workbook/app_share/voila/templates/workbook``) is Voila's lab
  template without its two CDN stylesheets, so the page asks for nothing outside the machine; it
  writes the recommendation card's preview (``page.preview_html``) into the page as HTML and shows
  the cells without waiting for Voila's JavaScript, so the card is on screen before the controls;
  ``allow_template_override``/``allow_theme_override`` = ``NO``: ``?template=`` and ``?theme=`` in
  the URL are ignored (they allowed script injection and CDN templates);
* ``workbook.app.server.WorkbookVoila``: Host header checked, security headers, bare error pages,
  no ``/voila/query`` route, a cap on visitors' kernels; kernels no page uses are culled after
  ``--cull-unused-s`` seconds, open but idle pages after ``--cull-idle-min`` minutes;
* before Voila starts, a check that 127.0.0.1 accepts connections (kernels need it): without it the
  launcher says so and exits 2 instead of pages hanging for 60 s.

The browser cannot run code in the kernel: Voila only forwards widget (comm) messages, never
``execute_request``.
"""
from __future__ import annotations

import argparse
import os
import sys

from traitlets.config import Config

from ..netcheck import loopback_problem
from ..paths import APP_NOTEBOOK, APP_SHARE_DIR, ROOT
from .server import WorkbookVoila

TEMPLATE = "workbook"
DEFAULT_PORT = 8866
DEFAULT_IP = "127.0.0.1"
LOOPBACK = {"127.0.0.1", "localhost", "::1"}


def voila_argv(port: int = DEFAULT_PORT, ip: str = DEFAULT_IP, token: str | None = None,
               base_url: str = "/", preheat: bool = True, auto_token: bool = False) -> list[str]:
    """The Voila command line of the app (without the program name). ``token=None`` and
    ``auto_token=False``: no token; ``auto_token``: Voila generates one and prints the URL with it."""
    argv = [
        str(APP_NOTEBOOK),
        "--no-browser",
        f"--port={port}",
        "--Voila.port_retries=0",            # a busy port is an error, not a silent move elsewhere
        f"--Voila.ip={ip}",
        f"--Voila.base_url={base_url}",
        f"--template={TEMPLATE}",
        "--theme=light",
        "--show_tracebacks=False",
        "--strip_sources=True",
        f"--VoilaConfiguration.preheat_kernel={preheat}",
    ]
    if token:
        argv.append(f"--Voila.token={token}")
    elif auto_token:
        argv.append("--Voila.auto_token=True")
    return argv


def voila_config(cull_idle_min: float = 0, cull_unused_s: float = 120, max_kernels: int = 8,
                 allowed_hosts: list[str] | None = None) -> Config:
    """Options that the command line cannot express: an empty file allowlist, so that
    ``/voila/files/...`` serves no file at all (Voila's default serves images of the folder); no
    ``voila.json``/``voila.py`` read from the cwd or the Jupyter config folders, so that no stray
    config file can point the server at another notebook or folder; only the widget manager among
    the front-end extensions; no template or theme from the URL; kernels that no page is connected
    to culled after ``cull_unused_s`` seconds (a page fetched but never opened, a closed tab), those
    of open pages after ``cull_idle_min`` idle minutes (0: never); at most ``max_kernels`` visitors'
    kernels (0: no cap); Host names served besides loopback (``allowed_hosts``)."""
    c = Config()
    c.Voila.config_file_paths = []
    c.VoilaConfiguration.file_allowlist = []
    c.VoilaConfiguration.file_denylist = [".*"]
    # the page needs one front-end extension, the widget manager; the others (anywidget, the
    # JupyterLab preview button, pygments' theme) would only add JavaScript to download
    c.VoilaConfiguration.extension_allowlist = ["@jupyter-widgets/jupyterlab-manager", "@voila-dashboards/widgets-manager8"]
    c.VoilaConfiguration.allow_template_override = "NO"
    c.VoilaConfiguration.allow_theme_override = "NO"
    c.VoilaConfiguration.multi_kernel_manager_class = "workbook.app.server.CullingKernelManager"
    c.MappingKernelManager.cull_idle_timeout = max(1, int(cull_unused_s))
    c.MappingKernelManager.cull_interval = max(1, min(60, int(cull_unused_s) // 2))
    c.MappingKernelManager.cull_connected = False
    c.MappingKernelManager.cull_busy = True     # a closed page's kernel is culled even while it computes
    c.CullingKernelManager.connected_idle_timeout = float(cull_idle_min * 60)
    # the pool's next kernel is asked for at once and starts once the visitor's page has drawn
    # (CullingKernelManager.start_kernel), not a fixed second later, in the middle of that drawing
    c.VoilaKernelManager.fill_delay = 0.0
    c.WorkbookVoila.max_kernels = max_kernels
    c.WorkbookVoila.allowed_hosts = list(allowed_hosts or [])
    return c


def voila_env(env: dict | None = None) -> dict:
    """Environment for Voila and its kernels: the package's template folder first on ``JUPYTER_PATH``,
    and this checkout first on ``PYTHONPATH`` so that the kernel (started in ``notebooks/``) imports
    the same ``workbook`` as the launcher, whatever the state of the editable install."""
    env = dict(os.environ if env is None else env)
    pp = [str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(pp))
    paths = [str(APP_SHARE_DIR)] + [p for p in env.get("JUPYTER_PATH", "").split(os.pathsep) if p]
    env["JUPYTER_PATH"] = os.pathsep.join(dict.fromkeys(paths))
    return env


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m workbook.app", description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"TCP port (default {DEFAULT_PORT})")
    p.add_argument("--ip", default=DEFAULT_IP,
                   help=f"address to bind (default {DEFAULT_IP}: this machine only; see docs/app.md before changing it)")
    p.add_argument("--token", action="store_true",
                   help="require a token: a generated one, printed in the URL at start "
                        "(a token in WORKBOOK_APP_TOKEN is always used)")
    p.add_argument("--base-url", default="/", help="URL prefix when served behind a reverse proxy (e.g. /workbook/)")
    p.add_argument("--no-preheat", action="store_true", help="do not run the notebook before the first visit")
    p.add_argument("--cull-idle-min", type=float, default=0,
                   help="shut down an open page's kernel after this many idle minutes (default 0: never)")
    p.add_argument("--cull-unused-s", type=float, default=120,
                   help="shut down a kernel no page is connected to after this many seconds (default 120)")
    p.add_argument("--max-kernels", type=int, default=8,
                   help="visitors served at once, one kernel each (default 8; 0: no cap)")
    p.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                   help="a Host name to serve besides loopback (repeatable; '*': any); needed behind a "
                        "proxy that forwards its own Host header, or with --ip on a network address")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if not APP_NOTEBOOK.is_file():
        print(f"{APP_NOTEBOOK}: file not found (the app notebook ships with the workbook)", file=sys.stderr)
        return 2
    if not 0 < args.port < 65536:
        print(f"--port: expected a TCP port between 1 and 65535, got {args.port}", file=sys.stderr)
        return 2
    if args.max_kernels < 0 or args.cull_unused_s <= 0 or args.cull_idle_min < 0:
        print("--max-kernels, --cull-idle-min: expected 0 or more; --cull-unused-s: more than 0", file=sys.stderr)
        return 2
    base_url = "/" + args.base_url.strip("/") + "/" if args.base_url.strip("/") else "/"
    token = os.environ.get("WORKBOOK_APP_TOKEN") or None   # from the environment: not visible in `ps`
    auto_token = args.token and token is None
    if args.ip not in LOOPBACK and not (token or auto_token):
        print(f"warning: serving on {args.ip} without a token: anyone who can reach port {args.port} can use "
              "the app. See docs/app.md (--token, a reverse proxy).", file=sys.stderr)
    hosts = list(args.allow_host) + ([args.ip] if args.ip not in LOOPBACK | {"0.0.0.0", "::", ""} else [])
    problem = loopback_problem()
    if problem:
        print(problem, file=sys.stderr)
        return 2
    os.environ.update(voila_env())             # before Voila collects its template paths
    WorkbookVoila.launch_instance(
        argv=voila_argv(args.port, args.ip, token, base_url, not args.no_preheat, auto_token),
        config=voila_config(args.cull_idle_min, args.cull_unused_s, args.max_kernels, hosts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
