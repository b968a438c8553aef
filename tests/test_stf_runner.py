"""The STF runner (softswitch.stf) on the real software switch: packet matching, entry
translation, the packet replication engine, counters, errors, and the command line.

Programs live in tests/p4/runner/:
* echo.p4: every packet goes back out of its ingress port unchanged; port 0 multicasts to
  group 1 (each copy tagged with its rid), port 6 is also cloned to session 5 (tag 0xcc),
  port 7 drops, port 8 forwards to port 9; counter pkts counts per ingress port.
* tables.p4: one table per match kind (fwd, tern, ipv4_lpm, rng and an egress fwd) plus a
  register, a counter and a meter.
The STF text of each test is written to a file in tmp_path and run on a freshly loaded switch.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from p4compiler.python_backend import compile_file
from softswitch.api import CloneSession, Exact, Lpm, Optional_, Range, Replica, Ternary
from softswitch.stf import StfError, match_packet, packet_diff, run_stf_on_switch
from softswitch.switch import Switch

RUNNER = Path(__file__).parent / "p4" / "runner"
ECHO_P4 = RUNNER / "echo.p4"
TABLES_P4 = RUNNER / "tables.p4"
REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def programs():
    """Each program compiled once; every test loads it into a fresh Switch."""
    return {"echo": compile_file(str(ECHO_P4)), "tables": compile_file(str(TABLES_P4))}


@pytest.fixture
def run(tmp_path, programs):
    """run(text, program="echo", switch=None) -> (StfResult, Switch)."""

    def _run(text: str, program: str = "echo", switch: Switch | None = None):
        sw = switch or Switch(programs[program])
        path = tmp_path / "t.stf"
        path.write_text(text)
        return run_stf_on_switch(sw, str(path)), sw

    return _run


# --- packet matching (pure functions) --------------------------------------------------------


def test_match_packet_rules():
    data = bytes.fromhex("0a0b0c0d")
    assert match_packet("0A0B0C0D", False, data)
    assert match_packet("0A*B**0D", False, data)
    assert match_packet("0A0B", False, data)  # extra trailing bytes are fine without '$'
    assert not match_packet("0A0B", True, data)  # ... but not with it
    assert match_packet("0A0B0C0D", True, data)
    assert not match_packet("0A0B0C0D0E", False, data)  # too short
    assert not match_packet("0A0B0C0E", False, data)
    assert match_packet(None, False, b"")


def test_packet_diff_marks_differing_nibbles():
    lines = packet_diff("0A0B0C0D", False, bytes.fromhex("0a0b1c0e"))
    exp_line, got_line, marks = lines[:3]
    col = exp_line.index("0A0B0C0D")
    assert got_line[col:] == "0A0B1C0E"
    assert marks[col:] == "    ^  ^"


def test_packet_diff_marks_extra_bytes_with_dollar():
    lines = packet_diff("0A", True, bytes.fromhex("0a0b"))
    col = lines[0].index("0A")
    assert lines[2][col:] == "  ^^"


# --- packet matching on the echo program -----------------------------------------------------


def test_echo_program_really_echoes(run):
    result, _ = run("packet 1 0a0b0c0d 0e0f\nexpect 1 0a0b0c0d0e0f $\n")
    assert result.ok, result.failures
    assert result.outputs == {1: [bytes.fromhex("0a0b0c0d0e0f")]}


def test_dont_care_nibbles_pass(run):
    result, _ = run("packet 1 0a0b0c0d 0e0f\nexpect 1 0a** *c0d ****\n")
    assert result.ok, result.failures
    # a don't-care does not make a wrong nibble elsewhere pass
    result, _ = run("packet 1 0a0b0c0d 0e0f\nexpect 1 0a** *c0e ****\n")
    assert not result.ok


def test_mismatch_reports_line_port_and_carets(run, tmp_path):
    result, _ = run("# c\npacket 1 0a0b0c0d\n\nexpect 1 0a0b0c0e\n")
    assert not result.ok
    (msg,) = result.failures
    assert msg.startswith(f"{tmp_path / 't.stf'}:4: port 1: packet #1")
    assert "t.stf:2" in msg  # the packet line that caused it
    assert "expected: 0A0B0C0E" in msg and "got:      0A0B0C0D" in msg
    lines = msg.splitlines()
    col = lines[-3].index("0A0B0C0E")
    assert lines[-1][col:] == "       ^"


def test_trailing_bytes_and_dollar(run):
    assert run("packet 1 0a0b0c\nexpect 1 0a0b\n")[0].ok
    result, _ = run("packet 1 0a0b0c\nexpect 1 0a0b $\n")
    assert not result.ok
    assert "expected exactly 2" in result.failures[0]
    assert run("packet 1 0a0b0c\nexpect 1 0a0b0c$\n")[0].ok


def test_too_short(run):
    result, _ = run("packet 1 0a\nexpect 1 0a0b\n")
    assert not result.ok and "too short" in result.failures[0]


MC_GROUP_1 = (  # group 1: rid 1 -> port 2, rid 2 -> port 3, rid 3 -> port 2
    "mc_mgrp_create 1\n"
    "mc_node_create 1 2\n"
    "mc_node_create 2 3\n"
    "mc_node_create 3 2\n"
    "mc_node_associate 1 0\n"
    "mc_node_associate 1 1\n"
    "mc_node_associate 1 2\n"
)


def test_per_port_order_matters_across_ports_it_does_not(run):
    ok = MC_GROUP_1 + "packet 0 aa\nexpect 3 02aa\nexpect 2 01aa\nexpect 2 03aa\n"
    result, _ = run(ok)
    assert result.ok, result.failures
    assert result.outputs == {2: [b"\x01\xaa", b"\x03\xaa"], 3: [b"\x02\xaa"]}
    swapped = MC_GROUP_1 + "packet 0 aa\nexpect 2 03aa\nexpect 2 01aa\nexpect 3 02aa\n"
    result, _ = run(swapped)
    assert not result.ok
    assert len(result.failures) == 2 and all("port 2" in f for f in result.failures)


def test_expectations_are_checked_at_the_end_like_bmv2stf(run):
    # expects may come before or after the packets that cause them
    assert run("expect 1 bb\nexpect 1 aa\npacket 1 bb\npacket 1 aa\n")[0].ok
    assert not run("expect 1 aa\nexpect 1 bb\npacket 1 bb\npacket 1 aa\n")[0].ok


def test_missing_packet(run):
    result, _ = run("packet 1 aa\nexpect 1 aa\nexpect 5 aa\n")
    assert not result.ok
    (msg,) = result.failures
    assert ":3: port 5: expected packet #1 never arrived" in msg


def test_dropped_packet_is_missing(run):
    result, _ = run("packet 7 aa\nexpect 7 aa\n")
    assert result.outputs == {}
    assert not result.ok and ":2: port 7: expected packet #1 never arrived" in result.failures[0]
    assert run("packet 7 aa\n")[0].ok  # nothing expected, nothing sent


def test_unexpected_packet_on_checked_port_fails(run):
    result, _ = run("packet 1 aa\npacket 1 bb\nexpect 1 aa\n")
    assert not result.ok
    (msg,) = result.failures
    assert ":2: port 1: unexpected packet #2" in msg and "BB" in msg


def test_packet_on_unnamed_port_is_not_checked(run):
    result, _ = run("packet 8 aa\n")  # echo.p4 sends port 8's packets to port 9
    assert result.ok
    assert result.outputs == {9: [b"\xaa"]}
    assert any("not checked" in line for line in result.log)
    # port 1 is named by the packet line: the echoed packet there is unexpected
    result, _ = run("packet 1 aa\n")
    assert not result.ok and "unexpected packet #1" in result.failures[0]


def test_expect_without_data_leaves_the_port_unchecked(run):
    """bmv2stf's expectedAny: `expect <port>` alone accepts any number of packets there."""
    assert run("packet 4 0123\nexpect 4\n")[0].ok
    assert run("expect 4\n")[0].ok
    assert run("packet 4 01\npacket 4 02\nexpect 4\n")[0].ok
    assert run("packet 4 01\nexpect 4 ff\nexpect 4\n")[0].ok  # the port is skipped entirely
    result, _ = run("packet 4 01\nexpect 4 ff\n")
    assert not result.ok


# --- table entries (tables.p4) --------------------------------------------------------------

ETH_TO_0A = "00000000000a 000000000001 1234"  # dst 0x0a, etherType 0x1234 -> data_t follows


def test_add_resolves_names_and_fills_exact_keys(run):
    # "Ingress.fwd" resolves by plain suffix (bmv2stf), "ethernet.dstAddr" by dotted suffix
    text = (
        "add Ingress.fwd ethernet.dstAddr:0x0a0b0c0d0e0f set_port(port:3)\n"
        "add Ingress.fwd ethernet.dstAddr:0x0a ingress_port:5 set_port(port:4)\n"
        # the first entry's ingress_port was filled with 0: a packet from port 0 hits it
        "packet 0 0a0b0c0d0e0f 000000000001 1234 00000000 00 0000\n"
        "expect 3 0a0b0c0d0e0f 000000000001 1234 00000000 00 0000 $\n"
        "packet 5 00000000000a 000000000001 1234 00000000 00 0000\n"
        "expect 4 00000000000a 000000000001\n"
    )
    result, sw = run(text, "tables")
    assert result.ok, result.failures
    first = sw.read_entries("MyIngress.fwd")[0]
    assert first.action == "MyIngress.set_port" and first.args == {"port": 3}
    # bmv2stf sends 0 for an exact key that the line leaves out
    assert first.match == {"hdr.ethernet.dstAddr": Exact(0x0A0B0C0D0E0F), "sm.ingress_port": Exact(0)}
    assert first.priority == 0


def test_ternary_priorities_larger_stf_number_wins(run):
    text = (
        "add tern 100 extra$0.h:0x25** h.$valid$:0 MyIngress.setb1(val:0x25, port:1)\n"
        "add tern 110 hdr.extra[0].h:0x2525 h.valid:0 setb1(val:0x27, port:2)\n"
        "add tern 0 data.f1:0x****0101 hdr.h.isValid():0 setb1(val:9, port:3)\n"
        # matches all three: 110 wins
        f"packet 0 {ETH_TO_0A} 00000101 00 2525\n"
        f"expect 2 {ETH_TO_0A} 00000101 27 2525 $\n"
        # matches 100 and 0: 100 wins
        f"packet 0 {ETH_TO_0A} 00000101 00 2501\n"
        f"expect 1 {ETH_TO_0A} 00000101 25 2501 $\n"
        # matches only 0
        f"packet 0 {ETH_TO_0A} ffff0101 00 1111\n"
        f"expect 3 {ETH_TO_0A} ffff0101 09 1111 $\n"
    )
    result, sw = run(text, "tables")
    assert result.ok, result.failures
    a, b, c = sorted(sw.read_entries("MyIngress.tern"), key=lambda e: e.args["port"])
    assert a.match == {"hdr.extra[0].h": Ternary(0x2500, 0xFF00), "hdr.h.isValid()": Exact(0)}
    assert b.match == {"hdr.extra[0].h": Ternary(0x2525, 0xFFFF), "hdr.h.isValid()": Exact(0)}
    assert c.match == {"hdr.data.f1": Ternary(0x0101, 0xFFFF), "hdr.h.isValid()": Exact(0)}
    assert b.priority > a.priority > c.priority > 0  # P4Runtime: larger wins, like STF


def test_ternary_other_forms(run):
    text = (
        "add tern 1 data.f1:0x0a&&&0xff NoAction()\n"
        "add tern 2 data.f1:10 NoAction()\n"  # decimal: exact match (extension)
        "add tern 3 data.f1:* NoAction()\n"
        "add tern 4 data.f1:0x0a000000/8 NoAction()\n"
    )
    result, sw = run(text, "tables")
    assert result.ok
    by_prio = sorted(sw.read_entries("MyIngress.tern"), key=lambda e: e.priority)
    f1 = [e.match.get("hdr.data.f1") for e in by_prio]
    assert f1 == [Ternary(0x0A, 0xFF), Ternary(10, 0xFFFFFFFF), None, Ternary(0x0A000000, 0xFF000000)]


def test_missing_priority_gets_insertion_order(run):
    text = (
        "add tern data.f1:0x01&&&0x0f set_port(port:1)\n"
        "add tern data.f1:0x11&&&0xff set_port(port:2)\n"
        # both match: the first line wins
        f"packet 0 {ETH_TO_0A} 00000011 00 0000\n"
        "expect 1\n"
    )
    result, sw = run(text, "tables")
    assert result.ok, result.failures
    first, second = sorted(sw.read_entries("MyIngress.tern"), key=lambda e: e.args["port"])
    assert first.priority > second.priority > 0


def test_priority_is_dropped_for_exact_and_lpm_tables(run):
    result, sw = run("add ipv4_lpm 7 ipv4.dstAddr:0x0a000000/8 NoAction()\n", "tables")
    assert result.ok
    assert sw.read_entries("MyIngress.ipv4_lpm")[0].priority == 0


def test_lpm_forms(run):
    text = (
        "add ipv4_lpm ipv4.dstAddr:0x0a010065 set_port(port:1)\n"  # 8 digits: /32
        "add ipv4_lpm ipv4.dstAddr:0x0a02**** set_port(port:2)\n"  # stars: /16
        "add ipv4_lpm ipv4.dstAddr:0x0a0300ff/24 set_port(port:3)\n"  # host bits cleared
        "add ipv4_lpm ipv4.dstAddr:167837696 set_port(port:4)\n"  # decimal: full width (10.1.1.0)
        "packet 0 000000000001 000000000002 0800 0a02abcd\n"
        "expect 2 000000000001 000000000002 0800 0a02abcd $\n"
        "packet 0 000000000001 000000000002 0800 0a030001\n"
        "expect 3\n"
    )
    result, sw = run(text, "tables")
    assert result.ok, result.failures
    got = sorted(sw.read_entries("MyIngress.ipv4_lpm"), key=lambda e: e.args["port"])
    assert [e.match["hdr.ipv4.dstAddr"] for e in got] == [
        Lpm(0x0A010065, 32),
        Lpm(0x0A020000, 16),
        Lpm(0x0A030000, 24),
        Lpm(167837696, 32),
    ]


def test_range_and_optional(run):
    text = (
        "add rng 5 port:10->20 opt:3 set_port(port:1)\n"
        "add rng 6 port:7 set_port(port:2)\n"
        f"packet 0 {ETH_TO_0A} 00000000 03 000f\n"  # meta.port 15, opt 3
        "expect 1\n"
        f"packet 0 {ETH_TO_0A} 00000000 04 000f\n"  # opt 4: no hit
        "expect 0\n"
        f"packet 0 {ETH_TO_0A} 00000000 09 0007\n"  # port 7, any opt
        "expect 2\n"
    )
    result, sw = run(text, "tables")
    assert result.ok, result.failures
    a, b = sorted(sw.read_entries("MyIngress.rng"), key=lambda e: e.args["port"])
    assert a.match == {"meta.port": Range(10, 20), "meta.opt": Optional_(3)}
    assert b.match == {"meta.port": Range(7, 7)}
    assert (a.priority, b.priority) == (6, 7)  # STF priority p becomes p + 1


def test_setdefault(run):
    text = (
        "setdefault MyIngress.fwd set_port(port:0x1fe)\n"
        f"packet 1 {ETH_TO_0A} 00000000 00 0000\n"
        "expect 510\n"
    )
    result, sw = run(text, "tables")
    assert result.ok, result.failures
    assert sw.get_default_entry("MyIngress.fwd") == ("MyIngress.set_port", {"port": 0x1FE})


@pytest.mark.parametrize(
    "line, message",
    [
        ("add nosuch NoAction()", "no table named 'nosuch'"),
        ("add fwd dstAddr:1 NoAction()", "table name 'fwd' is ambiguous: MyEgress.fwd, MyIngress.fwd"),
        (
            "add MyIngress.fwd nosuch:1 NoAction()",
            "no key field named 'nosuch' in the key of table MyIngress.fwd",
        ),
        ("add MyIngress.fwd dstAddr:1 MyEgress.set_port(port:1)", "no action named 'MyEgress.set_port'"),
        ("add MyIngress.fwd dstAddr:1 set_port(prt:1)", "has no parameter 'prt'"),
        ("add MyIngress.fwd dstAddr:1 set_port()", "missing argument(s) port"),
        ("add MyIngress.fwd dstAddr:1 set_port(port:512)", "does not fit in the 9 bits"),
        ("add MyIngress.fwd dstAddr:0x1*** NoAction()", "an exact key takes a plain number"),
        ("add MyIngress.fwd dstAddr:1 dstAddr:2 NoAction()", "given twice"),
        ("add ipv4_lpm dstAddr:1/33 NoAction()", "prefix length exceeds 32"),
        ("add rng port:20->10 NoAction()", "low end above high end"),
        ("setdefault nosuch NoAction()", "no table named"),
    ],
)
def test_bad_entries_raise_with_line(run, line, message):
    with pytest.raises(StfError) as info:
        run("wait\n" + line + "\n", "tables")
    assert info.value.line == 2
    assert message in str(info.value)


def test_switch_error_becomes_stf_error_with_line(run):
    line = "add MyIngress.fwd dstAddr:1 NoAction()"
    with pytest.raises(StfError) as info:
        run(f"{line}\n{line}\n", "tables")
    assert info.value.line == 2
    assert "the switch refused" in str(info.value) and "ALREADY_EXISTS" in str(info.value)


def test_remove_all_clears_tables(run):
    text = "add MyIngress.fwd dstAddr:1 NoAction()\nadd tern 1 data.f1:1 NoAction()\nremove all\n"
    result, sw = run(text, "tables")
    assert result.ok
    assert sw.read_entries("MyIngress.fwd") == [] and sw.read_entries("MyIngress.tern") == []


# --- multicast, mirroring, externs -----------------------------------------------------------


def test_multicast_nodes_become_replicas(run):
    text = (
        "mc_mgrp_create 1\n"
        "mc_node_create 400 7 6\n"  # handle 0; ports ascending as in bmv2's port bitmap
        "mc_node_create 401 8\n"  # handle 1
        "mc_node_associate 1 1\n"
        "mc_node_associate 1 0\n"
    )
    result, sw = run(text)
    assert result.ok
    assert sw.mc_group_get(1) == [Replica(8, 401), Replica(6, 400), Replica(7, 400)]
    # a packet from port 0 goes to group 1: one copy per replica, tagged with its rid (0x190/0x191)
    result, sw = run(text + "packet 0 aa\nexpect 6 90aa $\nexpect 7 90aa $\nexpect 8 91aa $\n")
    assert result.ok, result.failures
    result, sw = run(text + "mc_node_update 0 5\nmc_node_dissociate 1 1\npacket 0 bb\nexpect 5 90bb $\n")
    assert result.ok, result.failures
    assert sw.mc_group_get(1) == [Replica(5, 400)]
    result, sw = run(text + "mc_mgrp_destroy 1\npacket 0 cc\n")
    assert 1 not in sw.mc_groups()
    assert result.ok and result.outputs == {}


def test_multicast_errors(run):
    with pytest.raises(StfError, match=r"t.stf:1: no multicast group 5"):
        run("mc_node_associate 5 0\n")
    with pytest.raises(StfError, match=r":2: no multicast node with handle 0"):
        run("mc_mgrp_create 5\nmc_node_associate 5 0\n")


def test_mirroring(run):
    # echo.p4 clones packets from port 6 to session 5; the clone is tagged 0xcc
    result, sw = run("mirroring_add 5 4\npacket 6 aa\nexpect 6 aa $\nexpect 4 ccaa $\n")
    assert result.ok, result.failures
    assert sw.clone_sessions() == {5: CloneSession(5, [Replica(4, 0)])}
    text = (
        "mc_mgrp_create 2\nmirroring_add_mc 5 2\nmc_node_create 1 3\nmc_node_associate 2 0\n"
        "packet 6 aa\nexpect 6 aa $\nexpect 3 ccaa $\n"
    )
    result, sw = run(text)
    assert result.ok, result.failures
    assert sw.clone_sessions()[5] == CloneSession(5, [Replica(3, 1)])  # follows the group's later changes
    result, sw = run("mirroring_add 5 4\nmirroring_delete 5\npacket 6 aa\nexpect 6 aa\n")
    assert result.ok and sw.clone_sessions() == {} and 4 not in result.outputs


def test_registers_counters_meters(run):
    text = (
        "register_write reg 2 0xff\n"
        "counter_write pkts 1 3 300\n"  # simple_switch_CLI: <index> <packets> <bytes>
        "meter_set_rates m 1 0.5:1000 2:3000\n"
    )
    result, sw = run(text, "tables")
    assert result.ok
    assert [sw.register_read("MyIngress.reg", i) for i in range(4)] == [0, 0, 0xFF, 0]
    assert sw.counter_read("MyIngress.pkts", 1) == (300, 3)
    cfg = sw.meters["MyIngress.m"].configs[1]
    assert (cfg.cir, cfg.cburst, cfg.pir, cfg.pburst) == (500_000, 1000, 2_000_000, 3000)
    result, sw = run("register_write reg 2 5\nregister_reset reg\n", "tables")
    assert [sw.register_read("MyIngress.reg", i) for i in range(4)] == [0] * 4
    with pytest.raises(StfError, match="does not fit in the 32 bits"):
        run("register_write reg 0 0x100000000\n", "tables")


def test_check_counter(run):
    two = "packet 3 0a0b0c\npacket 3 0d\nexpect 3\nexpect 3\n"  # 2 packets, 4 bytes on port 3
    result, _ = run(two + "check_counter pkts(3) packets == 2\ncheck_counter pkts(3) bytes > 3\n")
    assert result.ok, result.failures
    result, _ = run(two + "check_counter pkts(3) packets == 5\ncheck_counter pkts(3) bytes < 4\n")
    assert not result.ok
    assert "packets is 2, expected == 5" in result.failures[0]
    assert "bytes is 4, expected < 4" in result.failures[1]
    result, _ = run(two + "check_counter pkts(3)\n")  # no condition: read and log
    assert result.ok and any("2 packets, 4 bytes" in line for line in result.log)


def test_check_direct_counter_by_handle(run):
    text = (
        "add tern 1 data.f1:0x01 set_port(port:1) = A\n"
        "add tern 2 data.f1:0x02 set_port(port:2) = B\n"
        f"packet 0 {ETH_TO_0A} 00000001 00 0000\n"
        "expect 1\n"
        "check_counter tern_ctr($A) packets == 1\n"
        "check_counter tern_ctr($B) packets == 0\n"
    )
    result, _ = run(text, "tables")
    assert result.ok, result.failures
    result, _ = run(text.replace("$A) packets == 1", "$A) packets == 0"), "tables")
    assert not result.ok and "packets is 1, expected == 0" in result.failures[0]
    with pytest.raises(StfError, match="no entry with handle 'C'"):
        run("check_counter tern_ctr($C) packets == 1\n", "tables")


# --- command line --------------------------------------------------------------------------


def stf_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "softswitch.stf", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_cli_exit_codes(tmp_path):
    good = tmp_path / "good.stf"
    good.write_text("packet 1 aa\nexpect 1 aa\n")
    failing = tmp_path / "fail.stf"
    failing.write_text("packet 1 aa\nexpect 1 ab\n")
    broken = tmp_path / "broken.stf"
    broken.write_text("packet 1 aa\nbogus\n")
    bad_p4 = tmp_path / "bad.p4"
    bad_p4.write_text("#include <core.p4>\n\ncontrol c() { apply { x = ; } }\n")
    echo = str(ECHO_P4)

    # -I and -D reach the preprocessor without disturbing anything
    p = stf_cli(echo, str(good), "-I", str(tmp_path), "-D", "X=1")
    assert (p.returncode, p.stderr) == (0, "")
    assert f"PASS {good}" in p.stdout

    p = stf_cli(echo, str(good), str(failing))
    assert p.returncode == 1, p.stderr
    assert f"PASS {good}" in p.stdout and f"FAIL {failing}" in p.stdout and "^" in p.stdout

    p = stf_cli(echo, str(broken), str(good))  # a broken file does not stop the others
    assert p.returncode == 2
    assert f"{broken}:2: unknown command 'bogus'" in p.stderr and f"PASS {good}" in p.stdout

    p = stf_cli(str(bad_p4), str(good))
    assert p.returncode == 2
    assert f"{bad_p4}:3:" in p.stderr and "error:" in p.stderr and "Traceback" not in p.stderr
