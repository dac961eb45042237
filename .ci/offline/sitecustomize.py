"""No network for notebook kernels under test (issue 14 §3).

``make nbval`` puts this directory on ``PYTHONPATH`` with
``RELKIT_BLOCK_NETWORK=1``, so every Python it starts (pytest and each
notebook's kernel) refuses a socket connection to anything but the loopback
interface: a notebook that needs the internet fails its test instead of
working only on a connected machine. Unix sockets and loopback (the kernel's
ZeroMQ channels) are left alone. Without the variable this file does nothing.
"""

import ipaddress
import os
import socket

if os.environ.get("RELKIT_BLOCK_NETWORK") == "1":
    _connect = socket.socket.connect
    _connect_ex = socket.socket.connect_ex

    def _is_local(address: object) -> bool:
        if not isinstance(address, tuple) or not address:
            return True  # AF_UNIX paths and abstract sockets
        host = str(address[0]).split("%")[0]
        if host in ("localhost", ""):
            return True
        try:
            return ipaddress.ip_address(host).is_loopback
        except ValueError:  # a host name: resolved elsewhere, refused here
            return False

    def _refuse(address: object) -> OSError:
        return OSError(
            101,  # ENETUNREACH
            f"network blocked in notebook tests (RELKIT_BLOCK_NETWORK=1): "
            f"connection to {address!r} refused; notebooks must run offline",
        )

    def connect(self: socket.socket, address: object) -> None:
        """socket.connect, refused for a non-loopback internet address."""
        if self.family in (socket.AF_INET, socket.AF_INET6) and not _is_local(address):
            raise _refuse(address)
        return _connect(self, address)

    def connect_ex(self: socket.socket, address: object) -> int:
        """socket.connect_ex, ENETUNREACH for a non-loopback internet address."""
        if self.family in (socket.AF_INET, socket.AF_INET6) and not _is_local(address):
            return 101
        return _connect_ex(self, address)

    socket.socket.connect = connect  # type: ignore[method-assign]
    socket.socket.connect_ex = connect_ex  # type: ignore[method-assign]
