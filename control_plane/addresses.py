"""Parsing of the MAC and IPv4 addresses the control plane takes as text or ints."""

from __future__ import annotations

import ipaddress
import re

_MAC = re.compile(r"[0-9A-Fa-f]{1,2}([:-][0-9A-Fa-f]{1,2}){5}")


def mac_to_int(mac: str | int) -> int:
    """``02:00:00:00:00:01`` (or an int) -> 48-bit int; ValueError on anything else."""
    if isinstance(mac, int):
        if not 0 <= mac < 1 << 48:
            raise ValueError(f"MAC address {mac:#x} does not fit in 48 bits")
        return mac
    if not _MAC.fullmatch(mac):
        raise ValueError(f"not a MAC address: {mac!r} (expected six hex bytes like 02:00:00:00:00:01)")
    return int("".join(p.zfill(2) for p in re.split("[:-]", mac)), 16)


def int_to_mac(value: int) -> str:
    return ":".join(f"{b:02x}" for b in value.to_bytes(6, "big"))


def ip_to_int(ip: str | int) -> int:
    """Dotted IPv4 (or an int) -> 32-bit int; ValueError on anything else."""
    if isinstance(ip, int):
        return int(ipaddress.IPv4Address(ip))
    try:
        return int(ipaddress.IPv4Address(ip))
    except ipaddress.AddressValueError as e:
        raise ValueError(f"not an IPv4 address: {ip!r} ({e})") from None


def int_to_ip(value: int) -> str:
    return str(ipaddress.IPv4Address(value))
