"""Can this machine talk to itself? Jupyter kernels (the app's, the batch reports') are reached over
TCP on 127.0.0.1; with the loopback interface down a kernel start hangs for 60 s and ends in
"Kernel didn't respond". ``loopback_problem()`` finds that out in well under a second."""
from __future__ import annotations

import socket

LOOPBACK_IP = "127.0.0.1"


def loopback_problem(timeout_s: float = 1.0) -> str | None:
    """``None`` when a TCP server on 127.0.0.1 accepts a connection from this process, else one
    sentence saying why kernels cannot start (bind or connect failure, with the OS reason)."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
            server.bind((LOOPBACK_IP, 0))
            server.listen(1)
            with socket.create_connection(server.getsockname(), timeout=timeout_s):
                pass
    except OSError as e:
        reason = e.strerror or type(e).__name__
        return (f"cannot start a Jupyter kernel: this machine cannot connect to itself on {LOOPBACK_IP} "
                f"({reason}); kernels talk to their client over the loopback interface, so bring it up "
                "(e.g. `ip link set lo up`) and try again")
    return None
