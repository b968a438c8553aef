"""The Forwarding control of p4/forwarding.p4: IPv4 routes and L2 entries."""

from __future__ import annotations

import ipaddress

from control_plane.addresses import ip_to_int, mac_to_int
from control_plane.p4runtime_client import Lpm, P4RuntimeClient


class Forwarding:
    """Owns ``InnetIngress.forwarding``'s tables ``ipv4_lpm`` and ``l2_exact``."""

    PREFIX = "InnetIngress.forwarding."

    def __init__(self, client: P4RuntimeClient, prefix: str = PREFIX) -> None:
        self.client = client
        self.prefix = prefix

    def add_route(self, prefix: str, dst_mac: str | int, src_mac: str | int, port: int) -> None:
        """Route ``prefix`` (e.g. ``10.0.1.0/24``) out of ``port``, rewriting the MACs."""
        net = ipaddress.IPv4Network(prefix, strict=False)
        self.client.insert_entry(
            self.prefix + "ipv4_lpm",
            {"hdr.ipv4.dst_addr": Lpm(int(net.network_address), net.prefixlen)},
            self.prefix + "set_nhop",
            {"dst_mac": mac_to_int(dst_mac), "src_mac": mac_to_int(src_mac), "port": port},
        )

    def delete_route(self, prefix: str) -> None:
        net = ipaddress.IPv4Network(prefix, strict=False)
        self.client.delete_entry(
            self.prefix + "ipv4_lpm", {"hdr.ipv4.dst_addr": Lpm(int(net.network_address), net.prefixlen)}
        )

    def add_host_route(self, ip: str, dst_mac: str | int, src_mac: str | int, port: int) -> None:
        """Route one host address (``ip``/32)."""
        ip_to_int(ip)  # ValueError with the bad text, before anything is written
        self.add_route(f"{ip}/32", dst_mac, src_mac, port)

    def add_l2(self, mac: str | int, port: int) -> None:
        """Frames to ``mac`` that are not IPv4 leave through ``port``."""
        self.client.insert_entry(
            self.prefix + "l2_exact",
            {"hdr.ethernet.dst_addr": mac_to_int(mac)},
            self.prefix + "l2_forward",
            {"port": port},
        )

    def add_flood(self, mac: str | int, group_id: int) -> None:
        """Frames to ``mac`` (e.g. the broadcast address) go to multicast group ``group_id``."""
        self.client.insert_entry(
            self.prefix + "l2_exact",
            {"hdr.ethernet.dst_addr": mac_to_int(mac)},
            self.prefix + "l2_flood",
            {"mgid": group_id},
        )

    def routes(self) -> list[tuple[str, dict[str, int]]]:
        out = []
        for e in self.client.read_entries(self.prefix + "ipv4_lpm"):
            lpm = e.match["hdr.ipv4.dst_addr"]
            assert isinstance(lpm, Lpm)
            out.append((f"{ipaddress.IPv4Address(lpm.value)}/{lpm.prefix_len}", e.params))
        return out
