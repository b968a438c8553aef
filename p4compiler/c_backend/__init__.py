"""The native back end: a compiled P4-16 v1model program -> C source + manifest for the C runtime.

    native = emit_c(compile_file("prog.p4"))
    native.source     # one C translation unit; #include "ss_runtime.h"; defines ss_program_desc
    native.manifest   # object numbering and table/extern definitions for the Python loader

Pipeline: `CompiledProgram` (Python back end: type-checked, ProgramInfo) -> `lower.lower_program`
(p4compiler.ir) -> `emit.CEmitter` (C). Programs that use something this back end does not
cover raise `NativeUnsupported` (a P4Error with one located line); the switch then runs the
Python back end instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from p4compiler import ir
from p4compiler import model as M
from p4compiler.c_backend.check import check_native
from p4compiler.c_backend.wide import limb_widths
from p4compiler.lower import NativeUnsupported, lower_program
from p4compiler.python_backend import CompiledProgram

__all__ = ["NativeProgram", "NativeUnsupported", "RegisterSlot", "build_manifest", "emit_c",
           "register_layout"]


@dataclass
class NativeProgram:
    source: str
    manifest: dict[str, Any]


@dataclass(frozen=True)
class RegisterSlot:
    """Where a register's cells live in the runtime. Cell i of the register is cell
    i * members + member of its bank's allocation, which the bank's first register (number
    `bank`) owns; `size` counts its cells (a register wider than 64 bits has one per limb)."""

    bank: int
    member: int
    members: int
    width: int
    size: int


def register_layout(registers: list[tuple[int, int]]) -> list[RegisterSlot]:
    """The memory layout of a program's registers, given as (width, size) in declaration order.

    Runs of registers declared one after another with the same size, each at most 64 bits wide,
    form a bank stored interleaved, cell by cell (ss_define_register_bank): a program that
    declares such arrays together (an aggregation's value registers) reads them all at one
    index per packet, and then touches one row instead of a cache line in each array. The
    compiler decides the layout, the generated code reads cells at constant offsets, the loader
    defines the registers from the manifest, and the runtime refuses a program whose registers
    were defined otherwise (ss_switch_load)."""
    slots: list[RegisterSlot] = []
    first = 0
    for i, (width, size) in enumerate(registers):
        prev = registers[i - 1] if i else None
        if prev is None or width > 64 or prev[0] > 64 or size != prev[1]:
            first = i
        slots.append(RegisterSlot(first, i - first, 0, width, size * len(limb_widths(width))))
    counts: dict[int, int] = {}
    for s in slots:
        counts[s.bank] = counts.get(s.bank, 0) + 1
    return [RegisterSlot(s.bank, s.member, counts[s.bank], s.width, s.size) for s in slots]


def emit_c(program: CompiledProgram) -> NativeProgram:
    """Generate the C program and its manifest (raises NativeUnsupported for uncovered constructs)."""
    from p4compiler.c_backend.emit import CEmitter

    for t in program.tables:  # SS_MAX_KEYS key fields, a key wider than 64 bits counting its limbs
        if sum(len(limb_widths(w)) for w in t.key_widths) > 64:
            raise NativeUnsupported(
                "the native backend does not support tables with more than 64 key words yet "
                f"(table {t.p4name})"
            )
    if len(program.info.direct_meters) > 8:  # ss_ctx.last_meter_color has 8 slots
        raise NativeUnsupported("the native backend does not support more than 8 direct meters yet")
    prog = lower_program(program)
    check_native(prog)  # the C limits (varbit locals, exit in a parser, ...): the IR covers them
    layout = register_layout([(r.bitwidth, r.size) for r in program.info.registers])
    source = CEmitter(prog, layout).run()
    manifest = build_manifest(program, prog.field_lists, prog.errors, layout)
    # digest fields of int<W> type: the loader gives them to handlers signed, as the Python
    # back end does (the C side carries two's complement bits)
    for st in ir.walk([s for body in prog.controls.values() for s in body]):
        if isinstance(st, ir.ExternCall) and st.kind == "digest" and st.obj < len(manifest["digests"]):
            manifest["digests"][st.obj]["signed"] = [
                isinstance(a.type, ir.Bits) and a.type.signed for a in st.args
            ]
    return NativeProgram(source, manifest)


def _key_pair(m: Any, kind: str, width: int) -> list[int]:
    """A const entry key as [value, mask|prefix length|range high] (ss_table_add's convention)."""
    full = (1 << width) - 1
    if m is None:  # wildcard
        return [0, full] if kind == "range" else [0, 0]
    if isinstance(m, M.Exact):
        return [m.value, full]
    if isinstance(m, M.Lpm):
        return [m.value, m.prefix_len]
    if isinstance(m, M.Ternary):
        return [m.value, m.mask]
    if isinstance(m, M.Range):
        return [m.low, m.high]
    if isinstance(m, M.Optional_):
        return [m.value, full]
    raise NativeUnsupported(f"the native backend does not support the match value {m!r} yet")


def build_manifest(
    program: CompiledProgram, field_lists: dict[int, list[list[str]]], errors: list[str],
    layout: list[RegisterSlot],
) -> dict[str, Any]:
    info = program.info
    action_no = {a.name: i for i, a in enumerate(info.actions)}
    dmeter_no = {d.name: i for i, d in enumerate(info.direct_meters)}
    tables = []
    for spec in program.tables:
        ti = info.table(spec.p4name)
        entries = []
        for keys, aname, args, prio, _const in spec.const_entries:
            entries.append(
                {
                    "keys": [
                        _key_pair(m, k, w)
                        for m, k, w in zip(keys, spec.key_kinds, spec.key_widths, strict=False)
                    ],
                    "priority": prio,
                    "action": action_no[aname],
                    "args": list(args),
                }
            )
        tables.append(
            {
                "name": spec.p4name,
                "keys": [
                    {"name": mf.name, "match_kind": mf.match_type, "width": mf.bitwidth}
                    for mf in ti.match_fields
                ],
                "actions": [action_no[a] for a in spec.action_fns],
                "size": spec.size,
                "direct_counter": spec.direct_counter is not None,
                "direct_meter": dmeter_no.get(spec.direct_meter, -1) if spec.direct_meter else -1,
                "largest_priority_wins": spec.largest_priority_wins,
                "default_action": action_no[spec.default_action],
                "default_args": list(spec.default_args),
                "const_default": ti.default_action_const,
                "const_entries": entries,
            }
        )
    regs = {e.p4name: e.args for e in program.externs if e.kind == "register"}
    return {
        "abi": 2,
        "tables": tables,
        "actions": [
            {"name": a.name, "params": [{"name": p.name, "width": p.bitwidth} for p in a.params]}
            for a in info.actions
        ],
        "registers": [
            {
                "name": r.name,
                "width": r.bitwidth,
                "size": r.size,
                "signed": bool(regs.get(r.name, {}).get("signed", False)),
                # the cells' place (register_layout): the loader defines the banks from this
                "bank": slot.bank,
                "member": slot.member,
                "members": slot.members,
            }
            for r, slot in zip(info.registers, layout, strict=True)
        ],
        "counters": [{"name": c.name, "size": c.size, "unit": c.unit} for c in info.counters],
        "meters": [{"name": m.name, "size": m.size, "unit": m.unit} for m in info.meters],
        "direct_meters": [{"name": m.name, "unit": m.unit} for m in info.direct_meters],
        "value_sets": [
            {"name": v.name, "size": v.size, "keys": [f.bitwidth for f in v.match_fields]}
            for v in info.value_sets
        ],
        "digests": [
            {"name": d.name, "fields": [[f.name, f.bitwidth] for f in d.fields]} for d in info.digests
        ],
        "errors": list(errors),
        "field_lists": {fid: [".".join(p) for p in paths] for fid, paths in sorted(field_lists.items())},
    }
