"""Parser value sets written through the switch API (SwitchAPI.value_set_write/value_set_read), on
both backends: a select on a value set takes its case only once members are written, stops when
they are replaced, and the write is checked (size, widths, kinds, duplicates) without changing
anything on an error. Program: tests/p4/value_set.p4 (see its header comment)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from p4compiler.python_backend import compile_file
from softswitch import api
from softswitch.api import Exact, Lpm, Optional_, Range, Ternary
from softswitch.native_switch import NativeSwitch
from softswitch.switch import Switch

P4_FILE = Path(__file__).parent / "p4" / "value_set.p4"
ETYPES, PAIRS, WIDES = "MyParser.etypes", "MyParser.pairs", "MyParser.wides"


@pytest.fixture(scope="module")
def program():
    return compile_file(str(P4_FILE))


@pytest.fixture(params=["python", "native"])
def sw(request, program) -> Iterator[Switch]:
    s = Switch(program) if request.param == "python" else NativeSwitch(program)
    yield s
    if isinstance(s, NativeSwitch):
        s.close()


def frame(etype: int, a: int = 0, b: int = 0, w: int = 0) -> bytes:
    return (bytes.fromhex("000000000001" "000000000002") + etype.to_bytes(2, "big") + bytes([a])
            + b.to_bytes(2, "big") + w.to_bytes(9, "big") + b"\x00" + b"payload")


def flags(sw: Switch, data: bytes) -> int | None:
    """tag.res of the frame that comes out (None: the tag was not parsed, port 2)."""
    (port, out), = sw.process_packet(0, data)
    if port == 2:
        assert out == data
        return None
    assert port == 1
    return out[14 + 12]


def test_info_lists_the_value_sets(program) -> None:
    vsets = {v.name: v for v in program.info.value_sets}
    assert set(vsets) == {ETYPES, PAIRS, WIDES}
    assert [(f.name, f.bitwidth, f.match_type) for f in vsets[PAIRS].match_fields] == [
        ("a", 8, "exact"), ("b", 16, "ternary")]
    assert vsets[ETYPES].size == 4 and vsets[WIDES].match_fields[0].bitwidth == 72


def test_members_decide_the_select(sw: Switch) -> None:
    assert sw.value_set_read(ETYPES) == []
    assert flags(sw, frame(0x22F3)) is None  # empty: matches nothing
    sw.value_set_write(ETYPES, [{"etypes": Exact(0x22F3)}, {"etypes": Exact(0x893B)}])
    assert flags(sw, frame(0x22F3)) == 1 and flags(sw, frame(0x893B)) == 1
    assert flags(sw, frame(0x0800)) is None
    # writing replaces: 0x22f3 stops matching
    sw.value_set_write(ETYPES, [{"etypes": Exact(0x0800)}])
    assert flags(sw, frame(0x22F3)) is None and flags(sw, frame(0x893B)) is None
    assert flags(sw, frame(0x0800)) == 1
    assert sw.value_set_read(ETYPES) == [{"etypes": Exact(0x0800)}]
    sw.value_set_write(ETYPES, [])
    assert flags(sw, frame(0x0800)) is None and sw.value_set_read(ETYPES) == []


def test_ternary_member_of_a_struct_value_set(sw: Switch) -> None:
    sw.value_set_write(ETYPES, [{"etypes": Exact(0x9000)}])
    assert flags(sw, frame(0x9000, 5, 0x1234)) == 1
    # a == 5 exactly, b's high byte 0x12 (ternary 0x1200 &&& 0xff00)
    sw.value_set_write(PAIRS, [{"a": Exact(5), "b": Ternary(0x1200, 0xFF00)}])
    assert flags(sw, frame(0x9000, 5, 0x1234)) == 3
    assert flags(sw, frame(0x9000, 5, 0x12FF)) == 3
    assert flags(sw, frame(0x9000, 5, 0x1334)) == 1  # b outside the mask's value
    assert flags(sw, frame(0x9000, 6, 0x1234)) == 1  # a differs
    # b left out: a wildcard; the second member matches a == 7 with any b
    sw.value_set_write(PAIRS, [{"a": Exact(6), "b": Ternary(0x0001, 0x0001)}, {"a": Exact(7)}])
    assert flags(sw, frame(0x9000, 5, 0x1234)) == 1
    assert flags(sw, frame(0x9000, 6, 0x0003)) == 3 and flags(sw, frame(0x9000, 6, 0x0002)) == 1
    assert flags(sw, frame(0x9000, 7, 0xFFFF)) == 3
    assert sw.value_set_read(PAIRS) == [{"a": Exact(6), "b": Ternary(1, 1)}, {"a": Exact(7)}]
    # Exact on the ternary field is a full mask
    sw.value_set_write(PAIRS, [{"a": Exact(6), "b": Exact(0x0002)}])
    assert flags(sw, frame(0x9000, 6, 0x0002)) == 3 and flags(sw, frame(0x9000, 6, 0x0003)) == 1


def test_wide_value_set_in_a_tuple_keyset(sw: Switch) -> None:
    sw.value_set_write(ETYPES, [{"etypes": Exact(0x9000)}])
    w = (0xAB << 64) | 0x0123456789ABCDEF  # crosses the 64-bit limb boundary
    assert flags(sw, frame(0x9000, 0x77, 0, w)) == 1
    sw.value_set_write(WIDES, [{"wides": Exact(w)}])
    assert flags(sw, frame(0x9000, 0x77, 0, w)) == 5
    assert flags(sw, frame(0x9000, 0x76, 0, w)) == 1  # the tuple's other element differs
    assert flags(sw, frame(0x9000, 0x77, 0, w ^ (1 << 70))) == 1  # differs in the high limb
    assert flags(sw, frame(0x9000, 0x77, 0, w ^ 1)) == 1  # differs in the low limb


@pytest.mark.parametrize("members, error, text", [
    ([{"etypes": Exact(1 << 16)}], api.SwitchError, "does not fit in 16 bits"),
    ([{"etypes": Exact(-1)}], api.SwitchError, "does not fit in 16 bits"),
    ([{"etypes": Exact(i)} for i in range(5)], api.ResourceExhausted, "at most 4 member(s); 5 given"),
    ([{"etypes": Exact(1)}, {"etypes": Exact(1)}], api.AlreadyExists, "repeats an earlier member"),
    ([{}], api.SwitchError, "is exact and needs a value"),
    ([{"etype": Exact(1)}], api.NotFound, "has no field 'etype'"),
    ([{"etypes": Ternary(1, 1)}], api.SwitchError, "is exact and cannot take"),
    ([{"etypes": Lpm(1, 16)}], api.SwitchError, "is exact and cannot take"),
])
def test_bad_writes_are_refused_and_change_nothing(sw: Switch, members, error, text) -> None:
    sw.value_set_write(ETYPES, [{"etypes": Exact(0x22F3)}])
    with pytest.raises(error) as exc:
        sw.value_set_write(ETYPES, members)
    assert text in str(exc.value) and "MyParser.etypes" in str(exc.value)
    assert sw.value_set_read(ETYPES) == [{"etypes": Exact(0x22F3)}]
    assert flags(sw, frame(0x22F3)) == 1


def test_ternary_field_checks(sw: Switch) -> None:
    with pytest.raises(api.SwitchError, match="bits set outside mask"):
        sw.value_set_write(PAIRS, [{"a": Exact(1), "b": Ternary(0x0101, 0x00FF)}])
    with pytest.raises(api.SwitchError, match="mask 65536 does not fit in 16 bits"):
        sw.value_set_write(PAIRS, [{"a": Exact(1), "b": Ternary(0, 1 << 16)}])
    with pytest.raises(api.SwitchError, match="cannot take"):
        sw.value_set_write(PAIRS, [{"a": Exact(1), "b": Range(1, 2)}])
    with pytest.raises(api.SwitchError, match="cannot take"):
        sw.value_set_write(PAIRS, [{"a": Optional_(1)}])
    with pytest.raises(api.ResourceExhausted):  # size 2
        sw.value_set_write(PAIRS, [{"a": Exact(i)} for i in range(3)])
    # duplicates are compared as values and masks: Exact and a full-mask Ternary are one member
    with pytest.raises(api.AlreadyExists):
        sw.value_set_write(PAIRS, [{"a": Exact(1), "b": Exact(2)}, {"a": Exact(1), "b": Ternary(2, 0xFFFF)}])
    with pytest.raises(api.NotFound, match="no value set named MyParser.nope"):
        sw.value_set_write("MyParser.nope", [])
    with pytest.raises(api.NotFound):
        sw.value_set_read("MyParser.nope")
    assert sw.value_set_read(PAIRS) == []
