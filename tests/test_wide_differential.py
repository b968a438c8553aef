"""Differential test of values wider than 64 bits (p4compiler/c_backend/wide.py): the Python
backend (the reference) and the native one must give the same frames.

- the wide feature programs (tests/p4/features/wide_*.p4) with random and edge-case field values
  (hypothesis), and wide_tables.p4 with random exact/ternary/lpm/range entries on its 128- and 72-bit
  keys, 128-bit action arguments and its bit<128> register;
- programs generated from a seed: random expression trees over bit<W>/int<W> of widths around and
  above 64 (+ - * / % & | ^ ~ unary -, |+| |-|, << >> by constant and run-time amounts,
  comparisons in ?:, casts between widths and signedness, slices, ++), one output field per
  expression.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from backends import allow_nonportable
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from p4compiler.python_backend import compile_file
from softswitch import api, stf
from softswitch.native_switch import NativeSwitch
from softswitch.switch import Switch

pytestmark = pytest.mark.stf

FEATURES = Path(__file__).resolve().parent / "p4" / "features"
ETH = bytes.fromhex("000000000001000000000002" "88b5")
# input layouts: field widths in wire order (after Ethernet)
LAYOUTS = {
    "wide_arith": [128, 128, 8],
    "wide_slices_casts": [128, 72, 72],  # n4 + u68 as one 72-bit group
    "wide_tables": [128, 128, 8, 8, 8, 8, 8, 16, 32, 128],
}

_PAIRS: dict[str, tuple[Switch, NativeSwitch]] = {}


def _pair(path: Path, setup: list[stf.StfCommand] | None = None) -> tuple[Switch, NativeSwitch]:
    key = str(path)
    if key not in _PAIRS:
        program = compile_file(str(path), allow_nonportable=allow_nonportable(path))
        ref, nat = Switch(program, seed=3), NativeSwitch(program, seed=3)
        for sw in (ref, nat):
            stf.run_stf_commands(sw, setup or [])
        _PAIRS[key] = (ref, nat)
    return _PAIRS[key]


def _edge(width: int) -> st.SearchStrategy[int]:
    """Values that stress the limb boundaries: 0, 1, all ones, single bits, around 2^64, random."""
    top = (1 << width) - 1
    edges = [0, 1, top, top >> 1, 1 << (width - 1), (1 << 64) - 1, 1 << 64, ((1 << 64) - 1) << 1]
    return st.one_of(st.sampled_from([e & top for e in edges]), st.integers(0, top))


def _frame(widths: list[int], values: list[int]) -> bytes:
    acc = 0
    for w, v in zip(widths, values, strict=True):
        acc = (acc << w) | (v & ((1 << w) - 1))
    return ETH + acc.to_bytes(sum(widths) // 8, "big")


def _same(ref: Switch, nat: NativeSwitch, frame: bytes) -> None:
    a, b = ref.process_packet(0, frame), nat.process_packet(0, frame)
    assert a == b, (f"frame {frame.hex()}: python {[(p, f.hex()) for p, f in a]} "
                    f"vs native {[(p, f.hex()) for p, f in b]}")


@pytest.mark.parametrize("name", ["wide_arith", "wide_slices_casts"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_wide_feature_programs_agree(name: str, data: st.DataObject) -> None:
    ref, nat = _pair(FEATURES / f"{name}.p4")
    widths = LAYOUTS[name]
    values = [data.draw(_edge(w) if w > 8 else st.integers(0, (1 << w) - 1)) for w in widths]
    if name == "wide_arith":
        values[2] = data.draw(st.sampled_from([0, 1, 63, 64, 65, 127, 128, 200]) | st.integers(0, 255))
    _same(ref, nat, _frame(widths, values))


def _random_entry(t: object, rng: random.Random) -> api.TableEntry:
    match: dict[str, api.Match] = {}
    for f in t.match_fields:  # type: ignore[attr-defined]
        w = f.bitwidth
        v = rng.getrandbits(w)
        if f.match_type == "exact":
            match[f.name] = api.Exact(v)
        elif f.match_type == "lpm":
            plen = rng.choice([0, 1, w // 2 - 1, w - 64, w - 65, w - 63, 64, 65, w, rng.randint(0, w)])
            plen = min(max(plen, 0), w)
            mask = ((1 << w) - 1) ^ ((1 << (w - plen)) - 1)
            match[f.name] = api.Lpm(v & mask, plen)
        elif f.match_type == "ternary":
            m = rng.choice([0, (1 << w) - 1, rng.getrandbits(w), ((1 << w) - 1) >> 60 << 60])
            match[f.name] = api.Ternary(v & m, m)
        elif f.match_type == "range":  # often equal high limbs, or low limbs in the "wrong" order
            hi = rng.choice([v, v ^ rng.getrandbits(64), v + rng.getrandbits(70), rng.getrandbits(w)])
            lo, hi = sorted((v, min(hi, (1 << w) - 1)))
            match[f.name] = api.Range(lo, hi)
    refs = [r for r in t.action_refs if r.scope != "DEFAULT_ONLY"] or t.action_refs  # type: ignore[attr-defined]
    return api.TableEntry(t.name, match, rng.choice(refs).name, {}, rng.randint(1, 1000))  # type: ignore[attr-defined]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
def test_wide_tables_agree(seed: int) -> None:
    """Random wide entries (kept: they accumulate over examples on both switches), random and
    near-miss addresses; also the bit<128> register read back through the control plane."""
    ref, nat = _pair(FEATURES / "wide_tables.p4")
    rng = random.Random(seed)
    info = ref.program.info
    added: list[api.TableEntry] = []
    for _ in range(rng.randint(1, 6)):
        t = rng.choice(info.tables)
        e = _random_entry(t, rng)
        action = next(a for a in info.actions if a.name == e.action)
        e.args = {p.name: rng.getrandbits(p.bitwidth) for p in action.params}
        outcome = []
        for sw in (ref, nat):
            try:
                sw.insert_entry(e)
                outcome.append("ok")
            except api.SwitchError as err:
                outcome.append(type(err).__name__)
        assert outcome[0] == outcome[1], (e, outcome)
        if outcome[0] == "ok":
            added.append(e)
    for _ in range(8):
        src, dst = rng.getrandbits(128), rng.getrandbits(128)
        if added and rng.random() < 0.7:  # near an entry's key
            e = rng.choice(added)
            for m in e.match.values():
                v = getattr(m, "value", 0)
                if v.bit_length() > 72:
                    dst = v ^ (rng.getrandbits(4) << rng.choice([0, 60, 63, 64, 65, 124]))
                else:
                    dst = (dst >> 72 << 72) | v
        _same(ref, nat, _frame(LAYOUTS["wide_tables"], [src, dst, 0, 0, 0, 0, 0, 0, 0, 0]))
    assert ref.register_read("MyIngress.r", 0) == nat.register_read("MyIngress.r", 0)
    v = rng.getrandbits(128)
    for sw in (ref, nat):
        sw.register_write("MyIngress.r", 1, v)
    assert ref.register_read("MyIngress.r", 1) == nat.register_read("MyIngress.r", 1) == v


# ---------------------------------------------------------------------------- generated programs
WIDTHS = [8, 33, 64, 65, 72, 100, 127, 128, 129, 192, 200]


class _Gen:
    """Random typed P4 expressions over the input fields f0..fn (each bit<W>)."""

    def __init__(self, rng: random.Random, fields: list[int]) -> None:
        self.rng = rng
        self.fields = fields

    def leaf(self, w: int) -> str:
        r = self.rng
        cands = [i for i, fw in enumerate(self.fields) if fw == w]
        if cands and r.random() < 0.7:
            return f"hdr.i.f{r.choice(cands)}"
        if r.random() < 0.5:
            i = r.randrange(len(self.fields))
            fw = self.fields[i]
            return f"((bit<{w}>)hdr.i.f{i})" if fw != w else f"hdr.i.f{i}"
        v = r.choice([0, 1, (1 << w) - 1, 1 << (w - 1), r.getrandbits(w)])
        return f"{w}w{v:#x}"

    def expr(self, w: int, depth: int) -> str:
        r = self.rng
        if depth <= 0 or r.random() < 0.2:
            return self.leaf(w)
        k = r.randrange(12)
        a = lambda: self.expr(w, depth - 1)  # noqa: E731
        if k == 0:
            return f"({a()} {r.choice(['+', '-', '*', '&', '|', '^', '|+|', '|-|'])} {a()})"
        if k == 1:
            return f"({r.choice(['~', '-'])}{a()})"
        if k == 2:
            return f"({a()} {r.choice(['<<', '>>'])} {r.choice([0, 1, 7, 63, 64, 65, w - 1, w, w + 3])})"
        if k == 3:  # run-time amount (bit<8> field)
            return f"({a()} {r.choice(['<<', '>>'])} hdr.i.sh)"
        if k == 4:  # signed ops on int<w>
            op = r.choice([">>", "+", "-", "|+|", "|-|"])
            rhs = "hdr.i.sh" if op == ">>" else f"((int<{w}>){a()})"
            return f"((bit<{w}>)(((int<{w}>){a()}) {op} {rhs}))"
        if k == 5:
            op = r.choice(["==", "!=", "<", "<=", ">", ">="])
            if r.random() < 0.5:
                return f"(({a()} {op} {a()}) ? {a()} : {a()})"
            return f"((((int<{w}>){a()}) {op} ((int<{w}>){a()})) ? {a()} : {a()})"
        if k == 6:  # cast from another width (zero- or sign-extension, truncation)
            w2 = r.choice(WIDTHS)
            inner = self.expr(w2, depth - 1)
            if r.random() < 0.5:
                return f"((bit<{w}>)((int<{w}>)((int<{w2}>){inner})))"
            return f"((bit<{w}>){inner})"
        if k == 7 and w < 200:  # slice of a wider value
            w2 = r.choice([x for x in WIDTHS if x > w] or [200])
            lo = r.randint(0, w2 - w)
            t = self.fresh(w2, depth - 1)
            return f"{t}[{lo + w - 1}:{lo}]"
        if k == 8 and w >= 2:  # concatenation
            lw = r.randint(1, w - 1)
            return f"({self.expr(lw, depth - 1)} ++ {self.expr(w - lw, depth - 1)})"
        if k == 9 and w >= 2:
            lw = r.randint(1, w - 1)
            return f"({self.leaf(lw)} ++ {self.leaf(w - lw)})"
        if k == 10:  # unsigned / and % (x / 0 and x % 0 are 0 on both back ends; the divisor
            # is never a constant, which the front end would refuse when 0)
            return f"({a()} {r.choice(['/', '%'])} (((bit<{w}>)hdr.i.sh) ^ {a()}))"
        return self.leaf(w)

    def fresh(self, w: int, depth: int) -> str:
        """A local holding a value (slices apply to l-values here)."""
        name = f"t{len(self.locals)}"
        self.locals.append(f"        bit<{w}> {name} = {self.expr(w, depth)};")
        return name

    def program(self, n: int) -> tuple[str, list[int]]:
        r = self.rng
        outs = [r.choice(WIDTHS) for _ in range(n)]
        body = []
        self.locals: list[str] = []
        for j, w in enumerate(outs):
            e = self.expr(w, 3)
            body.extend(self.locals)
            self.locals = []
            body.append(f"        hdr.o.r{j} = {e};")
        pad_out = (-sum(outs)) % 8
        fields_in = "\n".join(f"    bit<{w}> f{i};" for i, w in enumerate(self.fields))
        fields_out = "\n".join(f"    bit<{w}> r{j};" for j, w in enumerate(outs))
        src = PROGRAM.format(fields_in=fields_in, fields_out=fields_out, pad_out=pad_out or 8,
                             body="\n".join(body))
        return src, outs


PROGRAM = """#include <core.p4>
#include <v1model.p4>
header ethernet_t {{ bit<48> dst; bit<48> src; bit<16> etype; }}
header in_t {{
{fields_in}
    bit<8> sh;
}}
header out_t {{
{fields_out}
    bit<{pad_out}> pad;
}}
struct headers_t {{ ethernet_t eth; in_t i; out_t o; }}
struct meta_t {{ }}
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {{
    state start {{ pkt.extract(hdr.eth); pkt.extract(hdr.i); transition accept; }}
}}
control VC(inout headers_t hdr, inout meta_t meta) {{ apply {{ }} }}
control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {{
    apply {{
        hdr.o.setValid();
{body}
        sm.egress_spec = 1;
    }}
}}
control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {{ apply {{ }} }}
control CC(inout headers_t hdr, inout meta_t meta) {{ apply {{ }} }}
control Dep(packet_out pkt, in headers_t hdr) {{
    apply {{ pkt.emit(hdr.eth); pkt.emit(hdr.i); pkt.emit(hdr.o); }}
}}
V1Switch(P(), VC(), Ing(), Eg(), CC(), Dep()) main;
"""

IN_FIELDS = [128, 72, 65, 200, 64, 33, 129, 7]  # 8 + 8 (sh) bits short of whole bytes: 7 + 1 pad


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6])
def test_generated_wide_expressions_agree(seed: int, tmp_path: Path) -> None:
    rng = random.Random(seed)
    fields = IN_FIELDS + [(-sum(IN_FIELDS) - 8) % 8 or 8]
    src, _ = _Gen(rng, fields).program(24)
    path = tmp_path / f"gen{seed}.p4"
    path.write_text(src)
    program = compile_file(str(path), allow_nonportable=True)  # run-time / and % (not portable)
    ref, nat = Switch(program, seed=1), NativeSwitch(program, seed=1)
    widths = fields + [8]
    for _ in range(40):
        vals = []
        for w in widths:
            top = (1 << w) - 1
            vals.append(rng.choice([0, top, 1, 1 << (w - 1), rng.getrandbits(w), rng.getrandbits(w)]))
        vals[-1] = rng.choice([0, 1, 63, 64, 65, 128, 199, 200, 255, rng.getrandbits(8)])
        _same(ref, nat, _frame(widths, vals))


DIGEST_PROGRAM = """#include <core.p4>
#include <v1model.p4>
header ethernet_t { bit<48> dst; bit<48> src; bit<16> etype; }
header key_t { bit<128> k; bit<72> s; bit<8> b; }
struct headers_t { ethernet_t eth; key_t key; }
struct learn_t { bit<128> k; bit<8> b; bit<72> s; int<100> neg; }
struct meta_t { }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); pkt.extract(hdr.key); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        digest<learn_t>(1, { hdr.key.k, hdr.key.b, hdr.key.s, -((int<100>)hdr.key.s) });
        sm.egress_spec = 1;
    }
}
control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control Dep(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.key); } }
V1Switch(P(), VC(), Ing(), Eg(), CC(), Dep()) main;
"""


def test_wide_digest_fields_agree(tmp_path: Path) -> None:
    """A digest with 128-, 72- and 100-bit (signed) fields reaches the handler whole on both."""
    path = tmp_path / "digest.p4"
    path.write_text(DIGEST_PROGRAM)
    program = compile_file(str(path))
    rng = random.Random(5)
    got: dict[str, list] = {"python": [], "native": []}
    switches = {"python": Switch(program, seed=1), "native": NativeSwitch(program, seed=1)}
    for name, sw in switches.items():
        sw.add_digest_handler(lambda n, data, name=name: got[name].append((n, data)))
    for _ in range(20):
        vals = [rng.choice([0, (1 << 128) - 1, rng.getrandbits(128)]),
                rng.choice([0, (1 << 72) - 1, 1 << 71, rng.getrandbits(72)]), rng.getrandbits(8)]
        frame = _frame([128, 72, 8], vals)
        _same(switches["python"], switches["native"], frame)
    assert len(got["python"]) == 20
    assert got["python"] == got["native"]


CONST_PROGRAM = """#include <core.p4>
#include <v1model.p4>
header ethernet_t { bit<48> dst; bit<48> src; bit<16> etype; }
header key_t { bit<128> k; bit<72> s; bit<128> res; bit<8> tag; }
struct headers_t { ethernet_t eth; key_t key; }
struct meta_t { }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); pkt.extract(hdr.key); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action put(bit<128> v, bit<8> tag) { hdr.key.res = v; hdr.key.tag = tag; }
    action put72(bit<72> v) { hdr.key.res = (bit<128>)v; hdr.key.tag = 0x72; }
    table by_range {
        key = { hdr.key.k: range; hdr.key.s: ternary; }
        actions = { put; put72; }
        const entries = {
            (128w0x10000000000000000 .. 128w0x2ffffffffffffffff, _): put(128w0xabcdef0123456789abcdef, 1);
            (128w5 .. 128w0xffffffffffffffffffff, 72w0xff00000000000000ff &&& 72w0xff00000000000000ff):
                put72(72w0x8000000000000000ff);
            (_, 72w0x1 &&& 72w0x1): put(128w0xffffffffffffffffffffffffffffffff, 3);
        }
        const default_action = put(128w0x1234567890abcdef1234567890abcdef, 0xdd);
    }
    table by_lpm {
        key = { hdr.key.s: lpm; }
        actions = { put; NoAction; }
        const entries = {
            72w0xff0000000000000000 &&& 72w0xff0000000000000000: put(128w0x99, 0x08);
            72w0xff8000000000000000 &&& 72w0xffc000000000000000: put(128w0x9a, 0x0a);
        }
    }
    apply {
        if (hdr.key.tag == 0) { by_range.apply(); } else { by_lpm.apply(); }
        sm.egress_spec = 1;
    }
}
control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control Dep(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.key); } }
V1Switch(P(), VC(), Ing(), Eg(), CC(), Dep()) main;
"""


def test_wide_const_entries_agree(tmp_path: Path) -> None:
    """const entries and a const default action with wide keys (range, ternary, lpm) and wide
    arguments, installed by the loaders of both back ends from the program text."""
    path = tmp_path / "const.p4"
    path.write_text(CONST_PROGRAM)
    program = compile_file(str(path))
    ref, nat = Switch(program, seed=1), NativeSwitch(program, seed=1)
    rng = random.Random(9)
    picks = [0, 4, 5, 6, 1 << 64, (1 << 64) - 1, 3 << 64, (3 << 64) - 1, (1 << 80) - 1, 1 << 80,
             (1 << 128) - 1]
    for _ in range(60):
        k = rng.choice(picks + [rng.getrandbits(128)])
        s = rng.choice([0, 1, (0xff << 64) | 0xff, 0xff << 64, 0xff8 << 60, rng.getrandbits(72)])
        _same(ref, nat, _frame([128, 72, 128, 8], [k, s, 0, rng.choice([0, 0, 1])]))


HASH_PROGRAM = """#include <core.p4>
#include <v1model.p4>
header ethernet_t { bit<48> dst; bit<48> src; bit<16> etype; }
header h_t { bit<128> k; bit<128> r1; bit<128> r2; bit<128> r3; bit<32> r4; bit<16> r5; }
struct headers_t { ethernet_t eth; h_t h; }
struct meta_t { }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hash(hdr.h.r1, HashAlgorithm.identity, 128w0, { hdr.h.k }, 128w0);
        hash(hdr.h.r2, HashAlgorithm.crc32, hdr.h.k, { hdr.h.k }, 128w0x100000000000000000);
        hash(hdr.h.r3, HashAlgorithm.identity, hdr.h.k, { hdr.h.k }, 128w1000);
        hash(hdr.h.r4, HashAlgorithm.crc16, 32w7, { hdr.h.k, hdr.h.k[71:0] }, hdr.h.k);
        hash(hdr.h.r5, HashAlgorithm.csum16, 16w0, { hdr.h.k }, 32w0x10000);
        sm.egress_spec = 1;
    }
}
control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control Dep(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.h); } }
V1Switch(P(), VC(), Ing(), Eg(), CC(), Dep()) main;
"""


def test_wide_hash_agrees(tmp_path: Path) -> None:
    """hash() with 128-bit results, bases and maxima (identity, crc32, crc16, csum16 over wide
    fields): base + (h mod max) in 64 bits, as bmv2, on both back ends."""
    path = tmp_path / "hash.p4"
    path.write_text(HASH_PROGRAM)
    program = compile_file(str(path))
    ref, nat = Switch(program, seed=1), NativeSwitch(program, seed=1)
    rng = random.Random(11)
    for _ in range(40):
        k = rng.choice([0, 1, 999, 1000, (1 << 64) - 1, 1 << 64, (1 << 128) - 1, rng.getrandbits(128),
                        rng.getrandbits(70)])
        _same(ref, nat, _frame([128, 128, 128, 128, 32, 16], [k, 0, 0, 0, 0, 0]))


STACK_PROGRAM = """#include <core.p4>
#include <v1model.p4>
header ethernet_t { bit<48> dst; bit<48> src; bit<16> etype; }
header seg_t { bit<8> last; bit<120> pad; bit<128> addr; }
header v4_t { bit<8> tag; bit<32> a; }
header v6_t { bit<8> tag; bit<128> a; }
header_union ip_t { v4_t v4; v6_t v6; }
struct headers_t { ethernet_t eth; seg_t[3] segs; ip_t ip; }
struct meta_t { bit<128> first; bit<128> last_addr; @field_list(1) bit<136> kept; }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); transition segs; }
    state segs {
        pkt.extract(hdr.segs.next);
        transition select(hdr.segs.last.last) { 0: segs; default: ip; }
    }
    state ip {
        meta.last_addr = hdr.segs.last.addr;  // .last only in a parser (P4-16 8.18, p4c)
        transition select(pkt.lookahead<bit<8>>()) { 6: v6; default: v4; }
    }
    state v4 { pkt.extract(hdr.ip.v4); transition accept; }
    state v6 { pkt.extract(hdr.ip.v6); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        meta.first = hdr.segs[0].addr;
        if (hdr.ip.v6.isValid()) {
            hdr.ip.v6.a = hdr.ip.v6.a ^ hdr.segs[0].addr;
        } else if (hdr.ip.v4.isValid()) {
            bit<128> a = meta.last_addr;
            hdr.ip.v6.setValid();
            hdr.ip.v6.tag = 6;
            hdr.ip.v6.a = a + (bit<128>)hdr.ip.v4.a;
        }
        hdr.segs.pop_front(1);
        hdr.segs.push_front(1);
        hdr.segs[0].setValid();
        hdr.segs[0].last = 0x11;
        hdr.segs[0].addr = meta.first << 1;
        sm.egress_spec = 1;
    }
}
control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control Dep(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.eth); pkt.emit(hdr.segs); pkt.emit(hdr.ip); }
}
V1Switch(P(), VC(), Ing(), Eg(), CC(), Dep()) main;
"""


def test_wide_fields_in_stacks_and_unions_agree(tmp_path: Path) -> None:
    """Header stacks and unions whose headers hold 128-bit fields: extract with next/last,
    push/pop, union member switch, emit; random and truncated frames, on both back ends."""
    path = tmp_path / "stack.p4"
    path.write_text(STACK_PROGRAM)
    program = compile_file(str(path))
    ref, nat = Switch(program, seed=1), NativeSwitch(program, seed=1)
    rng = random.Random(3)
    for _ in range(60):
        n = rng.randint(1, 4)
        body = b""
        for i in range(n):
            body += bytes([1 if i == n - 1 else 0]) + bytes(15) + rng.getrandbits(128).to_bytes(16, "big")
        if rng.random() < 0.5:
            body += bytes([6]) + rng.getrandbits(128).to_bytes(16, "big")
        else:
            body += bytes([4]) + rng.getrandbits(32).to_bytes(4, "big")
        frame = ETH + body
        if rng.random() < 0.2:
            frame = frame[: rng.randint(14, len(frame))]
        _same(ref, nat, frame)


def test_digest_over_64_words_is_refused_with_a_located_line(tmp_path: Path) -> None:
    """33 bit<128> fields are 66 runtime words: more than a digest carries (SS_MAX_DIGEST_FIELDS),
    so the C emitter refuses the program (one located line) and `auto` runs the Python back end."""
    from p4compiler.c_backend import NativeUnsupported, emit_c

    fields = "\n".join(f"    bit<128> f{i};" for i in range(33))
    src = DIGEST_PROGRAM.replace("struct learn_t { bit<128> k; bit<8> b; bit<72> s; int<100> neg; }",
                                 "struct learn_t {\n" + fields + "\n}")
    src = src.replace("digest<learn_t>(1, { hdr.key.k, hdr.key.b, hdr.key.s, -((int<100>)hdr.key.s) });",
                      "learn_t l; digest<learn_t>(1, l);")
    path = tmp_path / "big.p4"
    path.write_text(src)
    with pytest.raises(NativeUnsupported) as ei:
        emit_c(compile_file(str(path)))
    assert "big.p4:" in str(ei.value) and "digests of more than 64 words" in str(ei.value)


RANDOM_PROGRAM = """#include <core.p4>
#include <v1model.p4>
header ethernet_t { bit<48> dst; bit<48> src; bit<16> etype; }
header r_t { bit<128> lo; bit<128> hi; bit<128> r; bit<72> r72; }
struct headers_t { ethernet_t eth; r_t r; }
struct meta_t { }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); pkt.extract(hdr.r); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        random(hdr.r.r, hdr.r.lo, hdr.r.hi);
        random(hdr.r.r72, (bit<72>)hdr.r.lo, 72w0xffffffffffffffffff);
        sm.egress_spec = 1;
    }
}
control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control Dep(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.r); } }
V1Switch(P(), VC(), Ing(), Eg(), CC(), Dep()) main;
"""


def test_wide_random_agrees(tmp_path: Path) -> None:
    """random() with 128- and 72-bit bounds: spans of one 64-bit word, of two, of 2^128 - 1
    (every draw in range) and empty ones draw the same xoshiro256** words on both back ends."""
    path = tmp_path / "random.p4"
    path.write_text(RANDOM_PROGRAM)
    program = compile_file(str(path))
    ref, nat = Switch(program, seed=17), NativeSwitch(program, seed=17)
    rng = random.Random(2)
    m = (1 << 128) - 1
    for _ in range(60):
        lo = rng.choice([0, 5, 1 << 64, (1 << 100) + 3, rng.getrandbits(128)])
        hi = rng.choice([lo, lo + 1, lo + (1 << 64) - 1, lo + (1 << 64), lo + rng.getrandbits(70), m,
                         rng.getrandbits(128), lo + 3 * (1 << 80)]) & m
        _same(ref, nat, _frame([128, 128, 128, 72], [lo, hi, 0, 0]))
