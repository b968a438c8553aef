"""Casts and shifts at every width combination, on both switch backends, against an independent
Python model of the P4-16 v1.2.4 semantics (hypothesis draws the operands):

- 8.11.1 explicit casts between bit<W> and int<W>: a width change keeps the signedness
  (int<W> sign-extends, bit<W> zero-extends, both truncate to the low bits), a signedness change
  keeps the width and the bits. Each source is cast to every width directly, width first then
  signedness, and signedness first then width (so widening extends by the sign of the type that
  is widened: `(bit<16>)(int<16>)i8` sign-extends, `(int<16>)(bit<16>)...` of a bit<8> does not).
- 8.9.2 shifts: `<<` and `>>` by a run-time amount (a bit<8> and a bit<32>, so amounts far past
  the width) and by constants at and past the width; a shift by the width or more gives 0, or
  for `>>` of a negative int<W> all ones (the sign); `>>` of an int<W> is arithmetic.

Widths: 1, 7, 8, 9, 16, 31, 32, 33, 63, 64, 65 and 128 (the native backend's 64-bit limb
boundary and the two-limb values), unsigned and signed (no int<1>: p4c refuses one-bit signed
types). One generated program holds every expression, one output field each; a mismatch names
the fields that differ. The outputs are split into groups, one output header each, chosen by
an input field (keeping each frame small).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from p4compiler.python_backend import compile_file
from softswitch.native_switch import NativeSwitch
from softswitch.switch import Switch

pytestmark = pytest.mark.stf

WIDTHS = (1, 7, 8, 9, 16, 31, 32, 33, 63, 64, 65, 128)
TYPES = [(w, s) for w in WIDTHS for s in (False, True) if not (s and w == 1)]
ETH = bytes.fromhex("000000000001000000000002" "88b5")
AMOUNTS = [("a8", 8), ("a32", 32)]  # run-time shift amounts
GROUP_BYTES = 2048  # output bytes per group (per frame)


def _t(w: int, s: bool) -> str:
    return f"{'int' if s else 'bit'}<{w}>"


def _f(w: int, s: bool) -> str:
    return f"{'i' if s else 'u'}{w}"


def _legal(w: int, s: bool) -> bool:
    return not (s and w == 1)


# ------------------------------------------------------------------ the model (spec semantics)
def _mask(w: int) -> int:
    return (1 << w) - 1


def _signed(v: int, w: int, s: bool) -> int:
    """The number a W-bit pattern denotes in bit<W> (s False) or int<W> (two's complement)."""
    return v - (1 << w) if s and v >> (w - 1) & 1 else v


def _cast(v: int, w: int, s: bool, w2: int) -> int:
    """Bits of a width change of the value v (in its own type): the number, modulo 2^w2."""
    return _signed(v, w, s) & _mask(w2)


def _shl(v: int, w: int, n: int) -> int:
    return (v << n) & _mask(w) if n < w else 0


def _shr(v: int, w: int, s: bool, n: int) -> int:
    return (_signed(v, w, s) >> min(n, w)) & _mask(w)  # Python's >> floors: the sign fills


# ------------------------------------------------------------------ the program
class Layout:
    """Every output expression with its P4 text, width and model function."""

    def __init__(self) -> None:
        # (name, width, P4 expression, model(values) -> bits)
        self.outs: list[tuple[str, int, str, object]] = []
        for w, s in TYPES:
            x = f"hdr.i.{_f(w, s)}"
            for w2 in WIDTHS:
                if _legal(w2, s):  # width change, same signedness
                    self._out(f"c_{_f(w, s)}_{_f(w2, s)}", w2, f"({_t(w2, s)}){x}",
                              lambda vs, w=w, s=s, w2=w2: _cast(vs[(w, s)], w, s, w2))
                if _legal(w2, s) and _legal(w2, not s):  # width, then signedness
                    self._out(f"cw_{_f(w, s)}_{_f(w2, not s)}", w2, f"({_t(w2, not s)})({_t(w2, s)}){x}",
                              lambda vs, w=w, s=s, w2=w2: _cast(vs[(w, s)], w, s, w2))
                if _legal(w, not s) and _legal(w2, not s):  # signedness, then width
                    self._out(f"cs_{_f(w, s)}_{_f(w2, not s)}", w2, f"({_t(w2, not s)})({_t(w, not s)}){x}",
                              lambda vs, w=w, s=s, w2=w2: _cast(vs[(w, s)], w, not s, w2))
            for a, _aw in AMOUNTS:
                self._out(f"shl_{_f(w, s)}_{a}", w, f"{x} << hdr.i.{a}",
                          lambda vs, w=w, s=s, a=a: _shl(vs[(w, s)], w, vs[a]))
                self._out(f"shr_{_f(w, s)}_{a}", w, f"{x} >> hdr.i.{a}",
                          lambda vs, w=w, s=s, a=a: _shr(vs[(w, s)], w, s, vs[a]))
            for n in sorted({0, 1, w - 1, w, w + 1, 130} - {-1}):
                self._out(f"shlk_{_f(w, s)}_{n}", w, f"{x} << {n}",
                          lambda vs, w=w, s=s, n=n: _shl(vs[(w, s)], w, n))
                self._out(f"shrk_{_f(w, s)}_{n}", w, f"{x} >> {n}",
                          lambda vs, w=w, s=s, n=n: _shr(vs[(w, s)], w, s, n))
        self.in_widths = [w for w, _ in TYPES] + [aw for _, aw in AMOUNTS] + [8]  # + group
        self.in_pad = -sum(self.in_widths) % 8
        self.groups: list[list[tuple[str, int, str, object]]] = [[]]
        for o in self.outs:
            if sum(x[1] for x in self.groups[-1]) + o[1] > GROUP_BYTES * 8:
                self.groups.append([])
            self.groups[-1].append(o)

    def _out(self, name: str, w: int, expr: str, model: object) -> None:
        self.outs.append((name, w, expr, model))

    def program(self) -> str:
        infields = "".join(f"    {_t(w, s)} {_f(w, s)};\n" for w, s in TYPES)
        infields += "".join(f"    bit<{aw}> {a};\n" for a, aw in AMOUNTS)
        infields += "    bit<8> group;\n"
        if self.in_pad:
            infields += f"    bit<{self.in_pad}> pad;\n"
        outs, members, assigns = "", "", ""
        for k, g in enumerate(self.groups):
            fields = "".join(f"    bit<{w}> {n};\n" for n, w, _, _ in g)
            if self._pad(g):
                fields += f"    bit<{self._pad(g)}> pad;\n"
            outs += f"header out{k}_t {{\n{fields}}}\n"
            members += f" out{k}_t o{k};"
            assigns += f"        {'else ' if k else ''}if (hdr.i.group == {k}) {{\n"
            assigns += f"            hdr.o{k}.setValid();\n"
            assigns += "".join(f"            hdr.o{k}.{n} = (bit<{w}>)({e});\n" for n, w, e, _ in g)
            assigns += "        }\n"
        return f"""#include <core.p4>
#include <v1model.p4>
header ethernet_t {{ bit<48> dst; bit<48> src; bit<16> etype; }}
header in_t {{
{infields}}}
{outs}struct headers_t {{ ethernet_t eth; in_t i;{members} }}
struct meta_t {{ }}
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {{
    state start {{ pkt.extract(hdr.eth); pkt.extract(hdr.i); transition accept; }}
}}
control VC(inout headers_t hdr, inout meta_t meta) {{ apply {{ }} }}
control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {{
    apply {{
        sm.egress_spec = 1;
{assigns}    }}
}}
control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {{ apply {{ }} }}
control CC(inout headers_t hdr, inout meta_t meta) {{ apply {{ }} }}
control Dep(packet_out pkt, in headers_t hdr) {{ apply {{ pkt.emit(hdr); }} }}
V1Switch(P(), VC(), Ing(), Eg(), CC(), Dep()) main;
"""

    @staticmethod
    def _pad(g: list) -> int:
        return -sum(o[1] for o in g) % 8

    @staticmethod
    def pack(fields: list[tuple[int, int]]) -> bytes:
        acc, total = 0, 0
        for w, v in fields:
            acc = (acc << w) | (v & _mask(w))
            total += w
        return acc.to_bytes(total // 8, "big")

    def frame(self, vs: dict, group: int) -> bytes:
        fields = [(w, vs[(w, s)]) for w, s in TYPES] + [(aw, vs[a]) for a, aw in AMOUNTS]
        return ETH + self.pack(fields + [(8, group), (self.in_pad, 0)])

    def decode(self, frame: bytes, group: int) -> list[int]:
        """The output fields of group `group` in a frame the program sent (after Ethernet and
        the input)."""
        g = self.groups[group]
        start = len(ETH) + (sum(self.in_widths) + self.in_pad) // 8
        total = sum(o[1] for o in g) + self._pad(g)
        assert len(frame) == start + total // 8, (len(frame), start, total)
        acc = int.from_bytes(frame[start:], "big") >> self._pad(g)
        vals = []
        for _, w, _, _ in reversed(g):
            vals.append(acc & _mask(w))
            acc >>= w
        return vals[::-1]


LAYOUT = Layout()


@pytest.fixture(scope="module")
def switches(tmp_path_factory: pytest.TempPathFactory) -> tuple[Switch, NativeSwitch]:
    path = Path(tmp_path_factory.mktemp("casts")) / "casts_shifts.p4"
    path.write_text(LAYOUT.program())
    program = compile_file(str(path))
    return Switch(program, seed=1), NativeSwitch(program, seed=1)


def _value(w: int) -> st.SearchStrategy[int]:
    top = _mask(w)
    edges = {0, 1, top, top >> 1, 1 << (w - 1), ((1 << 64) - 1) & top, (1 << 63) & top}
    return st.one_of(st.sampled_from(sorted(edges)), st.integers(0, top))


def _amount(bits: int) -> st.SearchStrategy[int]:
    edges = [n for n in (0, 1, 7, 8, 9, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255) if n < 1 << bits]
    return st.one_of(st.sampled_from(edges), st.integers(0, _mask(bits)))


def _check(sws: tuple[Switch, NativeSwitch], vs: dict) -> None:
    for k, g in enumerate(LAYOUT.groups):
        frame = LAYOUT.frame(vs, k)
        want = [m(vs) for _, _, _, m in g]  # type: ignore[operator]
        for sw in sws:
            out = sw.process_packet(0, frame)
            assert len(out) == 1 and out[0][0] == 1, f"{type(sw).__name__}: {len(out)} frames"
            got = LAYOUT.decode(out[0][1], k)
            bad = [f"{n} = {e}: {v:#x}, model {x:#x}"
                   for (n, _, e, _), v, x in zip(g, got, want, strict=True) if v != x]
            assert not bad, f"{type(sw).__name__}, inputs {vs}:\n" + "\n".join(bad[:20])


def test_program_covers_every_width_pair() -> None:
    """The program casts each source to each width (both orders of a signedness change) and
    shifts each type by run-time and constant amounts, at and past its width."""
    names = {n for n, _, _, _ in LAYOUT.outs}
    assert "cs_i8_u16" in names and "cw_i8_u16" in names and "c_i65_i128" in names
    assert "c_u128_u1" in names and "cs_u1_i7" not in names  # no int<1>
    assert {"shrk_i64_64", "shrk_i64_65", "shlk_u128_130", "shr_i128_a32"} <= names
    # the model itself: the two orders of a widening signedness change differ
    assert _cast(0x80, 8, True, 16) == 0xFF80 and _cast(0x80, 8, False, 16) == 0x0080
    assert _shr(0x80, 8, True, 200) == 0xFF and _shr(0x80, 8, False, 200) == 0
    assert _shl(1, 8, 2**32 - 1) == 0


def test_edge_values_agree_with_the_model(switches: tuple[Switch, NativeSwitch]) -> None:
    """All ones, the sign bit alone and 1 in every input, with amounts at the widths."""
    for pick in (lambda w: _mask(w), lambda w: 1 << (w - 1), lambda w: 1):
        for a8, a32 in ((0, 0), (63, 64), (64, 65), (127, 128), (255, 2**32 - 1)):
            vs: dict = {(w, s): pick(w) for w, s in TYPES}
            vs.update(a8=a8, a32=a32)
            _check(switches, vs)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_values_agree_with_the_model(switches: tuple[Switch, NativeSwitch],
                                            data: st.DataObject) -> None:
    vs: dict = {(w, s): data.draw(_value(w)) for w, s in TYPES}
    vs.update({a: data.draw(_amount(aw)) for a, aw in AMOUNTS})
    _check(switches, vs)
