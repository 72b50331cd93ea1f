"""Running the review app under uvicorn on a socket bound first, so the links can be printed with the real port
(`port=0`: any free one) before the first request is served."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable

from swapjudge.errors import SwapjudgeError

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on host:port (IPv6 when the host is an IPv6 address)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as err:
        sock.close()
        raise SwapjudgeError(f"cannot listen on {host}:{port}: {err.strerror} (is another server using the "
                             "port? {port} 0 picks a free one)", arguments=("port",)) from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def url_host(host: str) -> str:
    """The host as it goes into a URL: an IPv6 address in brackets, a wildcard address as this machine's name."""
    bare = host.strip("[]")
    if bare in ("0.0.0.0", "::"):
        return socket.gethostname()
    return f"[{bare}]" if ":" in bare else bare


def run_server(app: object, sock: socket.socket, *, on_ready: Callable[[], None] | None = None) -> None:
    """Serve `app` on the bound socket until Ctrl-C or SIGTERM (uvicorn's own graceful shutdown)."""
    import uvicorn

    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off",  # type: ignore[arg-type]
                            timeout_graceful_shutdown=5, server_header=False)
    server = uvicorn.Server(config)
    if on_ready is not None:
        on_ready()
    server.run(sockets=[sock])
