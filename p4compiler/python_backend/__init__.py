"""The Python back end: compile a P4-16 v1model program into Python code the software switch runs per packet.

    syntax tree --type check (codegen/blocks/calls/stmts)--> ProgramInfo, TableSpec, ExternSpec
                --p4compiler.lower--> p4compiler.ir --emit.py--> Python source of __build(RT)

The type check is also this package's: codegen/blocks/calls/stmts walk the syntax tree, check
it (errors are one located line) and collect the control-plane view; they write no code. The
only Python there is is `emit.py`'s, written from the IR the C back end also consumes, so a fix
in the front end or the lowering reaches both back ends.

    program = compile_file("prog.p4")
    # compile_file("prog.p4", allow_nonportable=True): also what p4c-bm2-ss refuses (see Compiler)
    program.info          # ProgramInfo: tables, actions, registers, ... (control-plane view)
    program.ir            # the lowered program (p4compiler.ir.Program)
    program.source        # the Python emit.py wrote; softswitch.runtime.instantiate runs program.code
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from p4compiler import model as M
from p4compiler.errors import P4Error
from p4compiler.frontend import ast as A
from p4compiler.frontend.parser import parse_file, parse_source  # noqa: F401 (re-exported)
from p4compiler.python_backend import types as T
from p4compiler.python_backend.blocks import compile_block, extern_instance
from p4compiler.python_backend.codegen import Compiler, ExternSpec, TableSpec, err
from p4compiler.python_backend.declorder import check_declaration_order
from p4compiler.python_backend.scope import Const

__all__ = ["CompiledProgram", "compile_file", "compile_text", "compile_program", "P4Error"]

V1SWITCH_BLOCKS = ("parser", "verify_checksum", "ingress", "egress", "compute_checksum", "deparser")


@dataclass
class CompiledProgram:
    info: M.ProgramInfo
    source: str  # the Python emit.py wrote from the IR
    code: Any  # compiled code object of `source`
    tables: list[TableSpec]
    externs: list[ExternSpec]
    blocks: dict[str, str]  # v1model block -> generated function name
    headers_type: T.StructLikeT
    meta_type: T.StructLikeT
    std_meta_type: T.StructLikeT
    errors: list[str]
    p4_source: str = ""  # the preprocessed P4 text, for P4Runtime's GetForwardingPipelineConfig
    filename: str = ""
    controller_headers: dict[str, T.StructLikeT] = field(default_factory=dict)
    ir: Any = None  # the lowered program (p4compiler.ir.Program)
    # the top-level `const` declarations with integer values, by name (their folded values: a
    # program's sizes as the preprocessor's -D settings made them)
    constants: dict[str, int] = field(default_factory=dict)
    allow_nonportable: bool = False  # compiled with the opt-in (codegen.Compiler.allow_nonportable)


def compile_file(path: str, include_dirs: Sequence[str] = (), defines: Mapping[str, str] | None = None,
                 *, allow_nonportable: bool = False) -> CompiledProgram:
    """Preprocess, parse and compile a P4-16 file for the v1model architecture. The program must
    also be one p4c-bm2-ss accepts unless `allow_nonportable` (see codegen.Compiler)."""
    import os

    from p4compiler.preprocess import preprocess

    if not os.path.exists(path):
        raise P4Error(f"P4 program {path} does not exist")
    text = preprocess(path, include_dirs, defines)
    prog = parse_source_preprocessed(text, path)
    cp = _compile_located(prog, path, allow_nonportable)
    cp.p4_source = text
    cp.filename = path
    return cp


def parse_source_preprocessed(text: str, filename: str) -> A.Program:
    from p4compiler.frontend.parser import parse_text

    return parse_text(text, filename)


def compile_text(text: str, filename: str = "<device config>", include_dirs: Sequence[str] = (),
                 defines: Mapping[str, str] | None = None, *, allow_nonportable: bool = False
                 ) -> CompiledProgram:
    """Compile P4-16 source given as text (e.g. the device config of a P4Runtime pipeline);
    `allow_nonportable` as in compile_file."""
    from p4compiler.preprocess import preprocess_text

    # keep the preprocessed text, as compile_file does: the native back end parses it again
    text = preprocess_text(text, filename, include_dirs, defines)
    prog = parse_source_preprocessed(text, filename)
    cp = _compile_located(prog, filename, allow_nonportable)
    cp.p4_source = text
    cp.filename = filename
    return cp


def _compile_located(prog: A.Program, filename: str, allow_nonportable: bool) -> CompiledProgram:
    """compile_program; an error about the whole program (no node to point at, e.g. no `main`)
    is located at the file, so every refusal names where it comes from."""
    try:
        return compile_program(prog, allow_nonportable=allow_nonportable)
    except P4Error as e:
        if e.file is None:
            e.file = filename
            e.args = (str(e),)
        raise


def compile_program(prog: A.Program, *, allow_nonportable: bool = False) -> CompiledProgram:
    """Type-check a parsed program, lower it to the IR and write its Python (emit.py)."""
    from p4compiler.python_backend.emit import emit_python

    cp = _Build(prog, allow_nonportable=allow_nonportable).run()
    emit_python(cp, prog)
    return cp


class _Build(Compiler):
    def __init__(self, prog: A.Program, allow_nonportable: bool = False):
        super().__init__(prog, allow_nonportable)
        self.pending_tables: list[tuple[Any, Any, str, str]] = []
        self.direct_counters: dict[str, Any] = {}
        self.direct_meters: dict[str, Any] = {}
        self.action_profile_decls: dict[str, M.ActionProfileInfo] = {}  # declared; in info once used
        self.info = M.ProgramInfo()

    def run(self) -> CompiledProgram:
        check_declaration_order(self.program)
        self.declare_globals()
        for d in self.toplevel_externs():
            extern_instance(self, d, self.g, "")
        main = self._find_main()
        pkg_t = self.resolve_type(main.type, self.g)
        if not isinstance(pkg_t, T.BlockT) or pkg_t.kind != "package":
            raise err(f"main must instantiate a package, not {pkg_t}", main)
        if pkg_t.decl.name != "V1Switch":
            raise err(f"this switch runs the v1model architecture (V1Switch), not {pkg_t.decl.name}", main)
        if len(main.args) != 6:
            raise err(f"V1Switch takes 6 blocks, {len(main.args)} given", main)
        block_decls = [self._block_arg(a.value, main) for a in main.args]
        parser_decl = block_decls[0][0]
        if not isinstance(parser_decl, A.ParserDecl):
            raise err("the first V1Switch argument must be a parser", main)
        if len(parser_decl.params) != 4:
            raise err("the v1model parser takes (packet_in, out H, inout M, inout standard_metadata_t)",
                      parser_decl)
        hdr_t = self.resolve_type(parser_decl.params[1].type, self.g)
        meta_t = self.resolve_type(parser_decl.params[2].type, self.g)
        sm_t = self.resolve_type(parser_decl.params[3].type, self.g)
        for t, what in ((hdr_t, "headers"), (meta_t, "metadata")):
            if not isinstance(t, T.StructLikeT) or t.kind != "struct":
                raise err(f"the v1model {what} type must be a struct, not {t}", parser_decl)
        self.meta_type = meta_t  # type: ignore[assignment]
        fns: dict[str, str] = {}
        for role, (decl, name, args) in zip(V1SWITCH_BLOCKS, block_decls, strict=False):
            kind_ok = isinstance(decl, A.ParserDecl) if role == "parser" else isinstance(decl, A.ControlDecl)
            if not kind_ok:
                kind = "parser" if role == "parser" else "control"
                raise err(f"V1Switch {role} block must be a {kind}", main)
            fns[role] = compile_block(self, decl, name, args, self.g)
        self._controller_headers()
        self._actions_info()
        for st in self.digests.values():
            self.info.digests.append(M.DigestInfo(st.type_name, [
                M.StructField(n, T.serial_width(ft) or 0) for n, ft in st.fields]))
        return CompiledProgram(
            info=self.info, source="", code=None, tables=self.tables, externs=self.externs, blocks=fns,
            headers_type=hdr_t, meta_type=meta_t, std_meta_type=sm_t, errors=self.errors,
            controller_headers=self.ctl_headers, allow_nonportable=self.allow_nonportable,
            constants={name: int(b.value) for name, b in self.g.names.items()
                       if isinstance(b, Const) and isinstance(b.value, int)},
        )

    # -------------------------------------------------------------- top-level instances
    def toplevel_externs(self) -> list[A.Instance]:
        """The extern instances declared at the top level of the program, in program order (P4-16
        v1.2.4 section 10.3.2, restrictions on top-level instantiations: extern objects may be
        instantiated there; p4c's translations of P4-14 programs declare them so). Each is one
        object shared by every block that names it, called by its own name in P4Info (no control
        prefix, as p4c names it); an action profile or selector there may serve tables of
        several controls."""
        out = []
        for d in self.program.decls:
            if not isinstance(d, A.Instance) or d.name == "main":
                continue
            t = self.resolve_type(d.type, self.g)
            if isinstance(t, T.BlockT) and t.kind != "package":
                # section 10.3.2: parsers and controls are instantiated inside a parser or
                # control, or as the package's arguments; p4c: "cannot instantiate at top-level"
                raise err(f"{t.kind} {d.name} is instantiated at the top level, which P4-16 does not "
                          f"allow (instantiate {t.decl.name} in the V1Switch arguments, or inside "
                          "a parser or control)", d)
            if isinstance(t, T.BlockT):
                continue  # a package
            if not isinstance(t, T.ExternT):
                raise err(f"cannot instantiate {t}", d)
            out.append(d)
        return out

    # -------------------------------------------------------------- main package
    def _find_main(self) -> A.Instance:
        mains = [d for d in self.program.decls if isinstance(d, A.Instance) and d.name == "main"]
        if not mains:
            raise P4Error("the program has no `main` package instance (e.g. V1Switch(...) main;)")
        return mains[-1]

    def _block_arg(self, e: Any, main: Any) -> tuple[Any, str, list]:
        if isinstance(e, A.Construct):
            t = self.resolve_type(e.type, self.g)
            if not isinstance(t, T.BlockT):
                raise err(f"{t} is not a parser or control", e)
            return t.decl, t.decl.name, e.args
        raise err("V1Switch arguments must be parser/control instantiations", e if e is not None else main)

    # -------------------------------------------------------------- ProgramInfo pieces
    def _controller_headers(self) -> None:
        self.ctl_headers: dict[str, T.StructLikeT] = {}
        for d in self.program.decls:
            if isinstance(d, A.HeaderDecl):
                ann = A.find_annotation(d.annotations, "controller_header")
                if ann is None:
                    continue
                t = self.resolve_type(A.NamedTypeRef(d.name), self.g)
                assert isinstance(t, T.StructLikeT)
                name = ann.string_arg()
                self.ctl_headers[name] = t
                anns = [a.source() for a in d.annotations if a.name not in ("name", "id")]
                self.info.controller_headers.append(M.ControllerHeaderInfo(
                    name, d.name, [M.StructField(n, T.serial_width(ft) or 0) for n, ft in t.fields],
                    annotations=anns))

    def _actions_info(self) -> None:
        """P4Info's actions, as p4c lists them: those of tables, tables' default actions (NoAction
        when implicit) and actions called directly from apply blocks."""
        seen: set[str] = set()

        def add(name: str) -> None:
            if name in seen or name not in self.info_actions:
                return
            seen.add(name)
            decl, params = self.info_actions[name]
            idann = A.find_annotation(decl.annotations, "id")
            anns = [a.source() for a in decl.annotations if a.name not in ("name", "id")]
            self.info.actions.append(M.ActionInfo(
                name,
                [M.ActionParam(n, w, i, [a.source() for a in pa if a.name not in ("name", "id")])
                 for i, (n, w, pa) in enumerate(params, start=1)],
                int(idann.body, 0) if idann else None, anns))

        for t in self.info.tables:
            for r in t.action_refs:
                add(r.name)
        for t in self.info.tables:
            add(t.default_action)
        for name in self.direct_actions:
            add(name)


def _field_lists(meta: T.StructLikeT) -> dict[int, list[tuple[str, ...]]]:
    """User metadata fields annotated @field_list(ids...), as paths for resubmit/recirculate/clone."""
    out: dict[int, list[tuple[str, ...]]] = {}

    def walk(t: T.StructLikeT, prefix: tuple[str, ...]) -> None:
        for n, ft in t.fields:
            path = prefix + (T.pyname(n),)
            for a in t.field_annotations.get(n, []):
                if a.name == "field_list":
                    for tok in a.body.split(","):
                        tok = tok.strip()
                        if tok:
                            out.setdefault(int(tok, 0), []).append(("m",) + path)
            if isinstance(ft, T.StructLikeT) and ft.kind == "struct":
                walk(ft, path)

    walk(meta, ())
    return out
