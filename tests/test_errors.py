"""Errors reach the user clearly, through the user-facing entry points, and nothing dies:

* a malformed STF line: `python -m softswitch.stf` exits 2 with `file:line: ...`;
* a P4 type error, an unsupported construct, a missing file: `python -m p4compiler.p4info`
  exits 2 with `file:line:col: error: ...` (or a one-line message), never a traceback;
* bad P4Runtime requests (wrong bit width, unknown table id, non-primary write, a device config
  that does not compile): a gRPC status with a reason, and the server keeps serving the pipeline
  it had;
* malformed frames (empty, truncated, garbage, oversized) through `Switch.process_packet`.
"""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import grpc
import pytest
from google.rpc import code_pb2, status_pb2
from p4.v1 import p4runtime_pb2
from p4rt_raw import RawClient

from p4compiler.errors import P4Error
from p4compiler.p4info import build_p4info
from p4compiler.python_backend import compile_file, compile_text
from softswitch import api
from softswitch.p4runtime_server import P4RuntimeServer
from softswitch.switch import Switch

REPO = Path(__file__).resolve().parent.parent
P4_FILE = REPO / "tests" / "p4" / "p4rt_basic.p4"
ECHO_P4 = REPO / "tests" / "p4" / "runner" / "echo.p4"
CPU_PORT = 64

# Ethernet + IPv4 10.0.1.1 -> 10.0.2.2 (correct header checksum) + 8 bytes of payload
IPV4_FRAME = bytes.fromhex(
    "00000000000200000000000108004500001c00010000401163ce0a0001010a000202" + "0000000000000000"
)
# what p4rt_basic.p4 makes of it with the entry below: new MACs, TTL 63, checksum updated
IPV4_FORWARDED = bytes.fromhex(
    "00000000000a00000000000208004500001c000100003f1164ce0a0001010a000202" + "0000000000000000"
)


def lpm_entry(ingress_port: int = 1) -> api.TableEntry:
    """ipv4_lpm: from `ingress_port`, 10.0.2.0/24 -> port 2 with destination MAC 0x0a."""
    return api.TableEntry(
        "MyIngress.ipv4_lpm",
        {
            "standard_metadata.ingress_port": api.Exact(ingress_port),
            "hdr.ipv4.dstAddr": api.Lpm(0x0A000200, 24),
        },
        "MyIngress.ipv4_forward",
        {"dstAddr": 0x0A, "port": 2},
    )


def cli(module: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", module, *args], cwd=REPO, capture_output=True, text=True, timeout=120
    )


# --- STF --------------------------------------------------------------------------------------

MALFORMED_STF = [  # (line, what the message must say)
    ("bogus 1", "unknown command 'bogus'"),
    ("packet 1 zz", "bad packet data: unexpected 'Z'"),
    ("packet x aa", "expected a decimal port number, got 'x'"),
    ("expect 1 0a0g", "bad packet data: unexpected 'G'"),
    ("add MyIngress.fwd dstAddr:1 set_port(port:1", "expected an action call"),
    ("mc_node_create", "expected 'mc_node_create <n> <n> ...'"),
    ("check_counter pkts(3) packets ~= 2", "expected 'check_counter <name>"),
    ("register_write pkts 0 1", "no register named 'pkts'"),
    ("wait 5", "wait takes no arguments"),
]


def test_malformed_stf_lines_exit_2_with_file_and_line(tmp_path):
    """One run over one STF file per malformed line (each preceded by a comment and a blank
    line, so the error is on line 3), plus a good file that still passes."""
    paths = []
    for i, (line, _) in enumerate(MALFORMED_STF):
        p = tmp_path / f"m{i}.stf"
        p.write_text(f"# a comment\n\n{line}\npacket 1 aa\nexpect 1 aa\n")
        paths.append(p)
    good = tmp_path / "good.stf"
    good.write_text("packet 1 aa\nexpect 1 aa\n")
    proc = cli("softswitch.stf", str(ECHO_P4), *map(str, paths), str(good))
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    for p, (line, message) in zip(paths, MALFORMED_STF, strict=True):
        assert f"{p}:3: " in proc.stderr, line
        (reported,) = [x for x in proc.stderr.splitlines() if x.startswith(f"{p}:3: ")]
        assert message in reported, (line, reported)
    assert f"PASS {good}" in proc.stdout


def test_stf_cli_missing_files(tmp_path):
    good = tmp_path / "good.stf"
    good.write_text("packet 1 aa\nexpect 1 aa\n")
    proc = cli("softswitch.stf", str(tmp_path / "nope.p4"), str(good))
    assert proc.returncode == 2 and "nope.p4" in proc.stderr and "Traceback" not in proc.stderr
    proc = cli("softswitch.stf", str(ECHO_P4), str(tmp_path / "nope.stf"))
    assert proc.returncode == 2 and "nope.stf" in proc.stderr and "Traceback" not in proc.stderr


# --- P4 source errors -------------------------------------------------------------------------

PROGRAM = """#include <core.p4>
#include <v1model.p4>
{decls}
header h_t {{ bit<8> f; bit<16> g; }}
struct headers_t {{ h_t h; }}
struct meta_t {{ }}
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {{
    state start {{ pkt.extract(hdr.h); transition accept; }}
}}
control VC(inout headers_t hdr, inout meta_t meta) {{ apply {{ }} }}
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {{
    action a(bit<9> p) {{ sm.egress_spec = p; }}
{body}
}}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {{ apply {{ }} }}
control CC(inout headers_t hdr, inout meta_t meta) {{ apply {{ }} }}
control D(packet_out pkt, in headers_t hdr) {{ apply {{ pkt.emit(hdr.h); }} }}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""

BAD_PROGRAMS = {  # name: (decls, body of control I, line:col of the error, message)
    "type_error_width": ("", "    apply { hdr.h.f = hdr.h.g; }", "13:13", "bit<16>"),
    "type_error_condition": ("", "    apply { if (hdr.h.f) { a(1); } }", "13:17", "bool"),
    "unknown_field": ("", "    apply { hdr.h.nosuch = 1; }", "13:13", "nosuch"),
    "selector_without_selector": (
        "",
        "    action_profile(32w128) ap;\n"
        "    table t { key = { hdr.h.f: selector; } actions = { a; } implementation = ap; }\n"
        "    apply { t.apply(); }",
        "14:",
        "need an action_selector",
    ),
    "unknown_extern": (
        "extern Foo {\n    Foo();\n    void bar();\n}",
        "    Foo() foo;\n    apply { foo.bar(); }",
        "16:5",
        "extern Foo is not supported",
    ),
    "syntax_error": ("", "    apply { hdr.h.f = ; }", "13:", "error"),
}


@pytest.mark.parametrize("name", sorted(BAD_PROGRAMS))
def test_p4_errors_exit_2_with_file_line_col(tmp_path, name):
    decls, body, where, message = BAD_PROGRAMS[name]
    prog = tmp_path / f"{name}.p4"
    prog.write_text(PROGRAM.format(decls=decls, body=body))
    out = tmp_path / "out.txt"
    proc = cli("p4compiler.p4info", str(prog), "--out", str(out))
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith(f"{prog}:{where}"), line
    assert ": error: " in line and message in line
    assert not out.exists()


def test_exit_in_a_parser_is_refused_with_its_location(tmp_path):
    """P4-16's parser statements do not include exit (p4c refuses it too); it used to compile
    and then end the Python backend's packet with an internal ExitSignal."""
    text = PROGRAM.format(decls="", body="    apply { }").replace(
        "state start { pkt.extract(hdr.h); transition accept; }",
        "state start { pkt.extract(hdr.h); exit; }")
    prog = tmp_path / "parser_exit.p4"
    prog.write_text(text)
    proc = cli("p4compiler.p4info", str(prog), "--out", str(tmp_path / "out.txt"))
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith(f"{prog}:8:"), line
    assert "exit is not allowed in a parser" in line, line


STACK_PROGRAM = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> f; }
struct headers_t { h_t[2] s; }
struct meta_t { bit<32> n; }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.s.next); PARSER transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { CONTROL } }
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.s); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


@pytest.mark.parametrize("parser, control, message", [
    ("", "hdr.s.next.f = 1;", "hdr.s.next: a stack's next can only be used in a parser"),
    ("", "hdr.s.last.f = 1;", "hdr.s.last: a stack's last can only be used in a parser"),
    ("", "meta.n = hdr.s.lastIndex;", "a stack's lastIndex can only be used in a parser"),
    ("hdr.s.push_front(1);", "", "push_front cannot be used on a header stack in a parser"),
    ("hdr.s.pop_front(1);", "", "pop_front cannot be used on a header stack in a parser"),
])
def test_stack_members_are_refused_where_p4c_refuses_them(parser, control, message):
    """P4-16 8.18: next, last and lastIndex name the parser's place in a stack (p4c refuses them
    in controls); push_front/pop_front are not parser statements (p4c refuses them there)."""
    with pytest.raises(P4Error, match=message) as err:
        compile_text(STACK_PROGRAM.replace("PARSER", parser).replace("CONTROL", control), "s.p4")
    assert str(err.value).startswith("s.p4:") and "\n" not in str(err.value)


@pytest.mark.parametrize("parser, message", [
    ("hdr.s.last.f = 1;", "cannot assign to hdr.s.last.f: a stack's last element is not an l-value"),
    ("hdr.s.last = hdr.s[0];", "cannot assign to hdr.s.last: a stack's last element"),
    ("hdr.s.last.f[3:0] = 1;", "cannot assign to hdr.s.last.f: a stack's last element"),
    ("hdr.s.last.setInvalid();", "setInvalid\\(\\) on hdr.s.last: a stack's last element"),
    ("pkt.extract(hdr.s.last);", "extract into hdr.s.last: a stack's last element"),
    ("f(hdr.s.last);", "inout argument hdr.s.last: a stack's last element"),
    ("g(hdr.s.last.f);", "out argument hdr.s.last.f: a stack's last element"),
])
def test_stack_last_is_not_an_lvalue(parser, message):
    """p4c's type check makes hs.next an l-value and hs.last not (P4-16 8.18: next is the element
    extract writes); writing through hs.last is refused with one located line, as p4c does."""
    text = STACK_PROGRAM.replace("PARSER", parser).replace("CONTROL", "").replace(
        "parser P(", "void f(inout h_t h) { }\nvoid g(out bit<8> x) { x = 0; }\nparser P(")
    with pytest.raises(P4Error, match=message) as err:
        compile_text(text, "s.p4")
    assert str(err.value).startswith("s.p4:9:") and "\n" not in str(err.value)


NOT_LVALUES = "not an l-value \\(P4-16 6.7"


@pytest.mark.parametrize("control, message", [
    ("g(8w3);", "out argument 8w3: " + NOT_LVALUES),
    ("f(hdr.s[0].f + 1);", "inout argument hdr.s\\[0\\].f \\+ 1: " + NOT_LVALUES),
    ("g((bit<8>)meta.n);", "out argument \\(bit<8>\\)meta.n: " + NOT_LVALUES),
    ("g(k());", "out argument k\\(\\): " + NOT_LVALUES),
    ("a(8w1);", "out argument 8w1: " + NOT_LVALUES),
    ("r.read(8w1, 0);", "cannot assign to 8w1: " + NOT_LVALUES),
    ("w({f = 1});", "out argument {f = 1}: " + NOT_LVALUES),
    ("f(_);", "call of function f: _ \\(don't care\\) passed to inout parameter x; only an out parameter"),
    ("q(_);", "call of function q: _ \\(don't care\\) passed to in parameter x"),
    ("r.write(0, _);", "register I.r.write: _ \\(don't care\\) is not supported"),
])
def test_out_and_inout_arguments_must_be_lvalues(control, message):
    """P4-16 6.8: an out or inout argument is an l-value (6.7: a name, a field, an element or a
    slice of one); a literal, an operation, a cast, a call or a struct expression is refused with
    one located line (these used to reach the emitter and fail there as an internal error). `_`
    discards an out parameter's value only (p4c refuses it for any other; it used to be taken as
    an omitted argument); the built-in externs' calls do not take it here (said, not crashed)."""
    decls = ("void f(inout bit<8> x) { x = x + 1; }\nvoid g(out bit<8> x) { x = 0; }\n"
             "bit<8> k() { return 3; }\nvoid w(out h_t h) { h.f = 1; }\nvoid q(in bit<8> x) { }\n"
             "parser P(")
    text = STACK_PROGRAM.replace("PARSER", "").replace("parser P(", decls).replace(
        "apply { CONTROL }",
        "register<bit<8>>(4) r; action a(out bit<8> x) { x = 1; } apply { CONTROL }").replace(
        "CONTROL", control)
    with pytest.raises(P4Error, match=message) as err:
        compile_text(text, "s.p4")
    assert str(err.value).startswith("s.p4:") and "\n" not in str(err.value)


def test_lvalue_arguments_compile():
    """The l-values 6.7 lists, and `_` for an ignored out, pass as out and inout arguments."""
    decls = "void f(inout bit<8> x) { x = x + 1; }\nvoid g(out bit<8> x) { x = 0; }\nparser P("
    control = "f(hdr.s[0].f); g(hdr.s[1].f[7:0]); g(_); bit<8> v; g(v); f(v);"
    text = STACK_PROGRAM.replace("PARSER", "").replace("parser P(", decls).replace("CONTROL", control)
    compile_text(text, "s.p4")


def test_stack_members_in_their_places_compile():
    compile_text(STACK_PROGRAM.replace("PARSER", "meta.n = hdr.s.lastIndex + (bit<32>)hdr.s.last.f; "
                                                 "hdr.s.next.f = hdr.s.last.f; hdr.s.next.setValid();")
                 .replace("CONTROL", "hdr.s.push_front(1); hdr.s.pop_front(1);"), "s.p4")


def test_p4_template_compiles():
    """The template itself is a good program (so the errors above come from the changes)."""
    ok = PROGRAM.format(decls="", body="    apply { a(2); }")
    sw = Switch(compile_text(ok, "ok.p4"))
    assert sw.process_packet(1, b"\x01\x00\x02xyz") == [(2, b"\x01\x00\x02xyz")]


def test_missing_p4_file(tmp_path):
    out = tmp_path / "out.txt"
    proc = cli("p4compiler.p4info", str(tmp_path / "missing.p4"), "--out", str(out))
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert f"{tmp_path / 'missing.p4'}" in proc.stderr and "does not exist" in proc.stderr
    assert not out.exists()


# --- P4Runtime ------------------------------------------------------------------------------


def error_details(err: grpc.RpcError) -> list[p4runtime_pb2.Error]:
    for key, value in err.trailing_metadata():
        if key == "grpc-status-details-bin":
            out = []
            for d in status_pb2.Status.FromString(value).details:
                e = p4runtime_pb2.Error()
                assert d.Unpack(e)
                out.append(e)
            return out
    raise AssertionError("no grpc-status-details-bin trailer")


@pytest.fixture
def p4rt():
    """A P4RuntimeServer whose loader compiles the device config as P4 source (with the
    compiler's default file name), p4rt_basic.p4 pushed by a primary client."""
    info = build_p4info(compile_file(str(P4_FILE)).info)
    sent: list[tuple[int, bytes]] = []
    server = P4RuntimeServer(
        None,
        load_pipeline=lambda config, p4info: Switch(compile_text(config.decode()), cpu_port=CPU_PORT),
        send_packets=sent.extend,
    )
    port = server.start("127.0.0.1:0")
    primary = RawClient(port, election_id=10)
    try:
        assert primary.next().arbitration.status.code == code_pb2.OK
        primary.set_pipeline(P4_FILE.read_bytes(), info)
        yield server, port, primary, info
    finally:
        primary.close()
        server.stop()


def ids(info) -> tuple[int, int, dict[str, int]]:
    table = next(t for t in info.tables if t.preamble.name == "MyIngress.ipv4_lpm")
    actions = {a.preamble.name: a.preamble.id for a in info.actions}
    return table.preamble.id, actions["MyIngress.ipv4_forward"], actions


def lpm_update(info, port_param: bytes = b"\x02", ingress: bytes = b"\x01", table_id: int | None = None):
    """An INSERT of lpm_entry() in P4Runtime form, with the given bytestrings."""
    tid, fwd, _ = ids(info)
    upd = p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT)
    te = upd.entity.table_entry
    te.table_id = tid if table_id is None else table_id
    te.match.add(field_id=1).exact.value = ingress
    lpm = te.match.add(field_id=2).lpm
    lpm.value = bytes([10, 0, 2, 0])
    lpm.prefix_len = 24
    te.action.action.action_id = fwd
    te.action.action.params.add(param_id=1, value=b"\x0a")
    te.action.action.params.add(param_id=2, value=port_param)
    return upd


def test_bad_p4runtime_requests_get_a_status_and_the_server_keeps_serving(p4rt):
    server, port, primary, info = p4rt
    switch = server.switch
    tid, _, _ = ids(info)

    # wrong bit width: 0x200 in the 9-bit port parameter, 0x200 in the 9-bit ingress_port key
    for upd in (lpm_update(info, port_param=b"\x02\x00"), lpm_update(info, ingress=b"\x02\x00")):
        with pytest.raises(grpc.RpcError) as err:
            primary.write(upd)
        (e,) = error_details(err.value)
        assert e.canonical_code == code_pb2.INVALID_ARGUMENT and "does not fit in 9 bits" in e.message

    # unknown table id
    with pytest.raises(grpc.RpcError) as err:
        primary.write(lpm_update(info, table_id=tid ^ 0x5A5A))
    (e,) = error_details(err.value)
    assert e.canonical_code == code_pb2.NOT_FOUND and "table" in e.message

    # a read of an unknown table id
    req = p4runtime_pb2.ReadRequest(device_id=1)
    req.entities.add().table_entry.table_id = tid ^ 0x5A5A
    with pytest.raises(grpc.RpcError) as err:
        list(primary.stub.Read(req))
    assert err.value.code() == grpc.StatusCode.NOT_FOUND and str(tid ^ 0x5A5A) in err.value.details()

    # a write from a client that is not the primary
    backup = RawClient(port, election_id=3)
    try:
        assert backup.next().arbitration.status.code == code_pb2.ALREADY_EXISTS  # not primary
        with pytest.raises(grpc.RpcError) as err:
            backup.write(lpm_update(info))
        assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED and "primary" in err.value.details()
    finally:
        backup.close()

    assert switch.read_entries("MyIngress.ipv4_lpm") == []  # none of them changed anything
    primary.write(lpm_update(info))  # a good request still works
    assert switch.read_entries("MyIngress.ipv4_lpm") == [lpm_entry()]
    with server.lock:
        assert switch.process_packet(1, IPV4_FRAME) == [(2, IPV4_FORWARDED)]


def _with_line_replaced(source: str, old: str, new: str) -> tuple[bytes, int]:
    """`source` with the first line containing `old` replaced by `new`; and that line's number."""
    lines = source.splitlines(keepends=True)
    (n,) = [i for i, line in enumerate(lines) if old in line][:1]
    lines[n] = new + "\n"
    return "".join(lines).encode(), n + 1


AP_LINE = "register<bit<32>>(16) last_seen;"
AP_DECL = "    register<bit<32>>(16) last_seen; action_selector(HashAlgorithm.crc16, 32w4, 32w8) ap;"
ACL_AP = ("counters = acl_counter;", "        counters = acl_counter; implementation = ap;")


@pytest.mark.parametrize(
    "edits, message",
    [
        ([("hdr.ipv4.ttl = hdr.ipv4.ttl - 1;", "        hdr.ipv4.ttl = hdr.ipv4.ttl - ;")], "syntax error"),
        ([("hdr.ipv4.ttl = hdr.ipv4.ttl - 1;", "        hdr.ipv4.ttl = hdr.ipv4.srcAddr;")], "bit<32>"),
        ([(AP_LINE, AP_DECL), ACL_AP], "has no selector keys"),
    ],
    ids=["syntax", "type", "action_profile"],
)
def test_device_config_that_does_not_compile(p4rt, edits, message):
    """INVALID_ARGUMENT with the compiler's file:line (of the last edit); the old pipeline stays,
    with its entries."""
    server, _port, primary, info = p4rt
    switch = server.switch
    primary.write(lpm_update(info))
    bad = P4_FILE.read_bytes()
    for old, new in edits:
        bad, line = _with_line_replaced(bad.decode(), old, new)
    with pytest.raises(grpc.RpcError) as err:
        primary.set_pipeline(bad, info)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    details = err.value.details()
    assert f"<device config>:{line}:" in details and "error:" in details and message in details, details
    assert server.switch is switch and len(switch.read_entries("MyIngress.ipv4_lpm")) == 1
    with server.lock:
        assert switch.process_packet(1, IPV4_FRAME) == [(2, IPV4_FORWARDED)]
    # and the good program still loads (a fresh switch, entries gone)
    primary.set_pipeline(P4_FILE.read_bytes(), info)
    assert server.switch is not switch and server.switch.read_entries("MyIngress.ipv4_lpm") == []


# --- malformed packets --------------------------------------------------------------------------


def test_switch_survives_malformed_frames():
    sw = Switch(compile_file(str(P4_FILE)), cpu_port=CPU_PORT)
    sw.insert_entry(lpm_entry())
    rng = random.Random(7)
    frames = [
        b"",
        b"\x00",
        IPV4_FRAME[:13],  # less than an Ethernet header
        IPV4_FRAME[:14],  # Ethernet says IPv4, no IPv4 header
        IPV4_FRAME[:33],  # IPv4 header cut one byte short
        bytes(rng.randrange(256) for _ in range(1500)),
        b"\xff" * 9000,
    ]
    for port in (1, CPU_PORT, 0):  # CPU_PORT: parsed as a packet_out header first
        for frame in frames:
            out = sw.process_packet(port, frame)
            assert isinstance(out, list)
            assert all(isinstance(p, int) and isinstance(d, bytes) for p, d in out)
    assert sw.counter_read("MyIngress.port_counter", 1)[1] == len(frames)  # all went through ingress
    assert sw.process_packet(1, IPV4_FRAME) == [(2, IPV4_FORWARDED)]
    # from the CPU port, the packet_out header (egress_port 3) still steers a good frame
    assert sw.packet_out(IPV4_FRAME, {"egress_port": 3, "_pad": 0}) == [(3, IPV4_FRAME)]


@pytest.mark.parametrize("tool", ["p4info", "softswitch", "stf_program", "stf_file", "topologies"])
def test_input_that_is_not_utf8_is_one_line_with_file_and_offset(tmp_path, tool):
    """A binary or Latin-1 .p4, .stf or topology file: exit 2, no traceback, the file and the
    offset of its first bad byte."""
    bad_p4 = tmp_path / "latin1.p4"
    bad_p4.write_bytes(b"header h_t { bit<8> f; }\n// caf\xe9\n")
    bad_stf = tmp_path / "latin1.stf"
    bad_stf.write_bytes(b"packet 0 00\n# caf\xe9\n")
    bad_yaml = tmp_path / "latin1.yaml"
    bad_yaml.write_bytes(b"name: caf\xe9\n")
    good_p4 = str(REPO / "p4" / "examples" / "basic_router.p4")
    args, bad, offset = {
        "p4info": (["p4compiler.p4info", str(bad_p4), "--out", str(tmp_path / "o.txt")], bad_p4, 31),
        "softswitch": (["softswitch", "--p4", str(bad_p4), "--no-grpc"], bad_p4, 31),
        "stf_program": (["softswitch.stf", str(bad_p4), str(bad_stf)], bad_p4, 31),
        "stf_file": (["softswitch.stf", good_p4, str(bad_stf)], bad_stf, 17),
        "topologies": (["topologies", "check", str(bad_yaml)], bad_yaml, 9),
    }[tool]
    proc = cli(*args)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    out = proc.stdout + proc.stderr
    assert "Traceback" not in out and "UnicodeDecodeError" not in out, out
    assert f"{bad}: " in out and f"not UTF-8 text (byte 0xe9 at offset {offset})" in out, out
