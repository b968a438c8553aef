"""The STF parser (softswitch.stf.parse_stf): every command form, and clear errors with line numbers."""

from __future__ import annotations

import pytest

from softswitch.stf import (
    AddCommand,
    CheckCounterCommand,
    DirectCommand,
    ExpectCommand,
    KeyValue,
    PacketCommand,
    SetDefaultCommand,
    StfError,
    parse_key_value,
    parse_stf,
)


def one(text: str):
    cmds = parse_stf(text, "t.stf")
    assert len(cmds) == 1
    return cmds[0]


def test_packet_hex_with_spaces():
    c = one("packet 3 0a0B 0c\t0d  ee")
    assert isinstance(c, PacketCommand)
    assert (c.port, c.data, c.line, c.file) == (3, bytes.fromhex("0a0b0c0dee"), 1, "t.stf")


def test_expect_dont_care_and_exact_length():
    c = one("expect 2 00 ** 0a*b $")
    assert isinstance(c, ExpectCommand)
    assert (c.port, c.pattern, c.exact_length) == (2, "00**0A*B", True)
    c = one("expect 2 00**0a*b")
    assert (c.pattern, c.exact_length) == ("00**0A*B", False)


def test_expect_without_data_means_any_packet():
    c = one("expect 7")
    assert isinstance(c, ExpectCommand)
    assert (c.port, c.pattern) == (7, None)


def test_comments_blank_lines_and_case():
    cmds = parse_stf("# header\n\n  WAIT   # trailing\nPacket 0 00\n\t\nexpect 1 11 # c\n", "f.stf")
    assert [(c.kind, c.line) for c in cmds] == [("wait", 3), ("packet", 4), ("expect", 6)]
    assert cmds[2].pattern == "11"


def test_add_full_form():
    c = one("add ingress.test1 503 data.f1:0x****0202 h$0.x : 7 ingress.setb1(val:7, port:0b11) = A")
    assert isinstance(c, AddCommand)
    assert c.table == "ingress.test1"
    assert c.priority == 503
    assert [k for k, _ in c.keys] == ["data.f1", "h$0.x"]
    kv = c.keys[0][1]
    assert (kv.kind, kv.value, kv.mask, kv.digit_bits, kv.star_bits) == ("num", 0x0202, 0xFFFF, 32, 16)
    assert c.keys[1][1].value == 7
    assert (c.action.name, c.action.args) == ("ingress.setb1", [("val", 7), ("port", 3)])
    assert c.handle == "A"


def test_add_without_priority_validity_key_and_no_args():
    c = one("add t hdr.h.isValid():1 h.$valid$:0b1 NoAction()")
    assert c.priority is None
    assert [k for k, _ in c.keys] == ["hdr.h.isValid()", "h.$valid$"]
    assert (c.action.name, c.action.args, c.handle) == ("NoAction", [], None)
    assert one("add t f:1 a() = $B").handle == "B"


def test_add_with_no_keys():
    c = one("add t a(x:1)")
    assert (c.table, c.keys, c.action.args) == ("t", [], [("x", 1)])


@pytest.mark.parametrize(
    "text, expected",
    [
        ("10", KeyValue("10", "num", value=10)),
        ("0x25**", KeyValue("0x25**", "num", value=0x2500, mask=0xFF00, digit_bits=16, star_bits=8)),
        ("0b1*0", KeyValue("0b1*0", "num", value=0b100, mask=0b101, digit_bits=3, star_bits=1)),
        ("0o7*", KeyValue("0o7*", "num", value=0o70, mask=0o70, digit_bits=6, star_bits=3)),
        ("0x0a&&&0xff", KeyValue("0x0a&&&0xff", "masked", value=0x0A, mask=0xFF)),
        ("0x0a000000/8", KeyValue("0x0a000000/8", "prefix", value=0x0A000000, prefix_len=8)),
        ("1->5", KeyValue("1->5", "range", value=1, high=5)),
        ("*", KeyValue("*", "any")),
        ("0x****", KeyValue("0x****", "any")),
    ],
)
def test_key_value_forms(text, expected):
    assert parse_key_value(text) == expected


def test_setdefault():
    c = one("setdefault MyIngress.t set_port(port:0x1ff)")
    assert isinstance(c, SetDefaultCommand)
    assert (c.table, c.action.name, c.action.args) == ("MyIngress.t", "set_port", [("port", 0x1FF)])
    c = one("setdefault t drop()")
    assert (c.action.name, c.action.args) == ("drop", [])


def test_multicast_and_mirroring_commands():
    cmds = parse_stf(
        "mc_mgrp_create 1113\nmc_node_create 400 6 7\nmc_node_associate 1113 0\n"
        "mirroring_add 5 4\nmirroring_add_mc 6 1113\nmirroring_delete 5\n",
        "m.stf",
    )
    assert all(isinstance(c, DirectCommand) for c in cmds)
    assert [(c.kind, c.numbers) for c in cmds] == [
        ("mc_mgrp_create", [1113]),
        ("mc_node_create", [400, 6, 7]),
        ("mc_node_associate", [1113, 0]),
        ("mirroring_add", [5, 4]),
        ("mirroring_add_mc", [6, 1113]),
        ("mirroring_delete", [5]),
    ]


def test_register_counter_meter_commands():
    cmds = parse_stf(
        "register_write MyIngress.r 3 0x10\nregister_reset r\ncounter_write c 1 2 3\n"
        "meter_set_rates m 0 0.5:10 1:20\nmeter_array_set_rates m 2:1 3:4\n",
        "x.stf",
    )
    assert [(c.kind, c.name, c.numbers) for c in cmds] == [
        ("register_write", "MyIngress.r", [3, 16]),
        ("register_reset", "r", []),
        ("counter_write", "c", [1, 2, 3]),
        ("meter_set_rates", "m", [0]),
        ("meter_array_set_rates", "m", []),
    ]
    assert cmds[3].rates == [(0.5, 10), (1.0, 20)]
    assert cmds[4].rates == [(2.0, 1), (3.0, 4)]


def test_check_counter_forms():
    c = one("check_counter cntDum(10) packets == 2")
    assert isinstance(c, CheckCounterCommand)
    assert (c.counter, c.index, c.count_type, c.op, c.value) == ("cntDum", 10, "packets", "==", 2)
    c = one("check_counter ingress.c($A) bytes >= 0x40")
    assert (c.counter, c.index, c.count_type, c.op, c.value) == ("ingress.c", "A", "bytes", ">=", 64)
    c = one("check_counter c(3)")
    assert (c.index, c.op) == (3, None)


def test_packet_data_as_bmv2stf_sends_it():
    """p4c's bmv2stf (HexToByte): digit pairs from the left, a lone last digit d is the byte 0x0d,
    no digits an empty packet (p4c's gauntlet_*-bmv2.stf files use both)."""
    assert [c.data for c in parse_stf("packet 1\npacket 2 abc\npacket 3 0 1\n")] == [
        b"",
        bytes([0xAB, 0x0C]),
        bytes([0x01]),
    ]


def test_remove_all_and_no_packet():
    assert [c.kind for c in parse_stf("remove all\nno_packet\n")] == ["remove", "no_packet"]


@pytest.mark.parametrize(
    "line, message",
    [
        ("frobnicate 1 2", "unknown command 'frobnicate'"),
        ("packet x 00", "decimal port number"),
        ("packet 1 00 ** 11", "bad packet data"),
        ("expect 1 00 $ 11", "bad packet data"),
        ("expect 1 0g", "bad packet data"),
        ("add t f:1", "expected an action call"),
        ("add t f:1 a(x)", "bad action argument 'x'"),
        ("add t f:1 a(x:zz)", "'zz' is not a number"),
        ("add t f:1 a(x:1, x:2)", "given twice"),
        ("add t f a()", "bad key 'f'"),
        ("add t f:0x1g a()", "bad key value '0x1g'"),
        ("add t f:10/x a()", "prefix length"),
        ("setdefault t", "expected an action call"),
        ("check_counter c", "check_counter: expected"),
        ("mc_node_create 1", "mc_node_create: expected"),
        ("mc_node_create 1 2 | 3", "LAG lists are not supported"),
        ("mirroring_add 1", "mirroring_add: expected"),
        ("register_write r 1", "register_write: expected"),
        ("meter_set_rates m 0 1:2", "two <rate>:<burst> pairs"),
        ("wait 3", "wait takes no arguments"),
        ("remove t", "only 'remove all'"),
    ],
)
def test_malformed_lines_name_file_and_line(line, message):
    text = "# ok\npacket 0 00\n" + line + "\n"
    with pytest.raises(StfError) as info:
        parse_stf(text, "bad.stf")
    err = info.value
    assert (err.file, err.line) == ("bad.stf", 3)
    assert str(err).startswith("bad.stf:3: ")
    assert message in str(err)
