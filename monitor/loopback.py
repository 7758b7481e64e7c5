"""Whether a host name stays on this machine: ``localhost`` (and its subdomains) or a
loopback address. Shared by the gateway client (which sends its token in the clear only
there) and the metrics endpoint (which answers only a loopback ``Host`` there)."""

from __future__ import annotations

import ipaddress


def is_loopback_name(name: str) -> bool:
    """Whether ``name`` (no port, no brackets) is ``localhost``, ``*.localhost`` or a
    loopback address (127.0.0.0/8, ::1); a trailing dot and case do not count."""
    name = name.rstrip(".").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False
