"""Which listening addresses are loopback, and what `krag ui` says when serving beyond it.

Light on purpose (standard library only): `krag ui` checks before anything heavy loads.
"""

from __future__ import annotations

import ipaddress


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (``localhost``, 127.0.0.0/8, ``::1``)."""
    host = host.strip()
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def ui_exposure_warning(host: str) -> str:
    """One line for `krag ui --host HOST` beyond loopback ('' on loopback)."""
    if is_loopback(host):
        return ""
    return (f"warning: the UI has no login and {host} lets anyone who can reach it read and "
            "change the graph; bind it to 127.0.0.1 behind an authenticating reverse proxy "
            "(e.g. oauth2-proxy or nginx with auth_basic; see docs/GUIDE.md, 'The chat UI beyond "
            "this machine')")
