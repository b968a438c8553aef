"""innet-drl's P4-16 compiler, a tool apart from the software target (as p4c is apart from bmv2).

    preprocess.py   #include / #define / #if
    frontend/       lexer, LALR grammar (lark), syntax tree
    python_backend/ the type check (and the control-plane view it collects) and emit.py:
                    ir -> Python, the executable reference
    lower.py        the mid end: syntax tree -> ir (reuses python_backend's typing rules)
    ir.py           the typed, lowered, inlined program that both back ends walk
    c_backend/      ir -> C for the native runtime (check.py: what C cannot represent)
    p4info.py       P4Info with p4c's names and ids
    model.py        the control-plane view of a program (tables, actions, externs, ...)

`softswitch/` (the target) and `control_plane/` both use it.
"""

from p4compiler.errors import P4Error
from p4compiler.python_backend import CompiledProgram, compile_file, compile_text

__all__ = ["P4Error", "CompiledProgram", "compile_file", "compile_text"]
