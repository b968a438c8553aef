"""Entry priorities of tables with entries in the program (tests/p4/spec/table_priorities.p4,
whose .stf checks which entry wins): the numbers the control plane sees (SwitchAPI and a
P4Runtime ReadRequest), which initial entries it may change, and the located errors for
priorities the compiler refuses. Both backends."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
from google.rpc import code_pb2, status_pb2
from p4.v1 import p4runtime_pb2
from p4rt_raw import served

from p4compiler.errors import P4Error
from p4compiler.p4info import build_p4info
from p4compiler.python_backend import compile_file, compile_text
from softswitch import api
from softswitch.native_switch import create_switch

P4_FILE = Path(__file__).parent / "p4" / "spec" / "table_priorities.p4"
INT32_MAX = 2**31 - 1
ETH = bytes.fromhex("000000000001000000000002" + "88b5")


def _frame(sel: int, k8: int = 0, k8b: int = 0, k16: int = 0, k32: int = 0) -> bytes:
    return ETH + bytes([sel, k8, k8b]) + k16.to_bytes(2, "big") + k32.to_bytes(4, "big") + b"\0"


def _hit(sw, frame: bytes) -> int:
    ((port, data),) = sw.process_packet(0, frame)
    assert port == 1
    return data[-1]


@pytest.fixture(scope="module")
def program():
    return compile_file(str(P4_FILE))


@pytest.fixture(params=["python", "native"])
def sw(request, program):
    return create_switch(program, request.param)


def _prios(sw, table: str) -> list[tuple[int, int, bool]]:
    """(entry number, priority, const) of each entry, in the program's order."""
    got = [(e.args["v"], e.priority, e.is_const) for e in sw.read_entries(f"MyIngress.{table}")]
    return sorted(got)


def test_priorities_the_control_plane_sees(sw) -> None:
    # @priority(N) is bmv2's number; PI (simple_switch_grpc) reports INT32_MAX - N
    assert _prios(sw, "t_anno") == [
        (1, INT32_MAX - 3, True), (2, INT32_MAX - 2, True), (3, INT32_MAX - 1, True),
        (4, INT32_MAX - 9, True), (5, INT32_MAX - 5, True),
    ]
    # the spec's example: smallest wins, delta 10; only the entries marked const are const
    assert _prios(sw, "t_small") == [
        (1, 10, True), (2, 20, False), (3, 30, False), (4, 40, True), (5, 40, False),
        (6, 50, False), (7, 5, False), (8, 15, False),
    ]
    assert [p for _, p, _ in _prios(sw, "t_large")] == [1000, 900, 950, 500, 400, 2000, 1900]
    assert _prios(sw, "t_order") == [(1, 1, False), (2, 2, False), (3, 3, False)]
    # const entries without priorities: positions, as p4c-bm2-ss gives them to bmv2 (PI: INT32_MAX - i)
    assert _prios(sw, "t_range") == [(i, INT32_MAX - i, True) for i in range(1, 6)]
    # only exact and lpm keys: no priorities
    assert {p for _, p, _ in _prios(sw, "t_lpm")} == {0}


def test_const_entries_stay_and_the_others_can_change(sw) -> None:
    t_small = {e.args["v"]: e for e in sw.read_entries("MyIngress.t_small")}
    with pytest.raises(api.PermissionDenied):
        sw.delete_entry(t_small[1])
    with pytest.raises(api.PermissionDenied):
        sw.modify_entry(api.TableEntry(t_small[4].table, t_small[4].match, t_small[4].action,
                                       {"v": 0x44}, t_small[4].priority))
    with pytest.raises(api.PermissionDenied):  # nor can the control plane add const entries
        sw.insert_entry(api.TableEntry(t_small[1].table, {"hdr.d.k8": api.Exact(9)},
                                       "MyIngress.set_r", {"v": 9}, 9, is_const=True))
    assert _hit(sw, _frame(2, 1, 0, 0x0001)) == 7  # entry 7 (priority 5) wins
    sw.delete_entry(t_small[7])
    assert _hit(sw, _frame(2, 1, 0, 0x0001)) == 1  # then entry 1 (10) before entry 8 (15)
    e6 = t_small[6]
    sw.modify_entry(api.TableEntry(e6.table, e6.match, e6.action, {"v": 0x66}, e6.priority))
    assert _hit(sw, _frame(2, 6, 0, 0x1234)) == 0x66
    # a control-plane entry between two program entries: priority 12 wins over 15 (smallest wins)
    sw.insert_entry(api.TableEntry(e6.table, {"hdr.d.k8": api.Exact(1), "hdr.d.k16": api.Ternary(1, 0xF)},
                                   "MyIngress.set_r", {"v": 0x12}, 12))
    assert _hit(sw, _frame(2, 1, 0, 0x0001)) == 1  # 10 still wins
    # a table of const entries takes nothing from the control plane
    with pytest.raises(api.PermissionDenied):
        sw.insert_entry(api.TableEntry("MyIngress.t_range", {"hdr.d.k8": api.Exact(9)},
                                       "MyIngress.set_r", {"v": 9}, 9))
    # clearing a table keeps what is const
    sw.clear_table("MyIngress.t_small")
    assert [v for v, _, _ in _prios(sw, "t_small")] == [1, 4]
    assert _hit(sw, _frame(2, 6, 0, 0x1234)) == 0xEE


@pytest.mark.parametrize("backend", ["python", "native"])
def test_p4runtime_read_reports_const_entries(backend: str, program) -> None:
    p4info = build_p4info(program.info)
    tids = {t.preamble.name: t.preamble.id for t in p4info.tables}
    with served(create_switch(program, backend)) as (client, _server):
        stub = client.stub

        def read(table: str) -> list[p4runtime_pb2.TableEntry]:
            req = p4runtime_pb2.ReadRequest(device_id=1)
            req.entities.add().table_entry.table_id = tids[table]
            return [e.table_entry for resp in stub.Read(req) for e in resp.entities]

        anno = read("MyIngress.t_anno")
        assert sorted((e.priority, e.is_const) for e in anno) == sorted(
            (INT32_MAX - b, True) for b in (3, 2, 1, 9, 5))
        small = {e.priority: e.is_const for e in read("MyIngress.t_small")}
        assert small[10] and not small[20] and not small[5]
        assert {e.priority for e in read("MyIngress.t_lpm")} == {0}
        # deleting a const entry is refused with PERMISSION_DENIED
        (const_entry,) = [e for e in read("MyIngress.t_small") if e.priority == 10]
        upd = p4runtime_pb2.Update(type=p4runtime_pb2.Update.DELETE)
        upd.entity.table_entry.CopyFrom(const_entry)
        upd.entity.table_entry.ClearField("is_const")
        with pytest.raises(grpc.RpcError) as exc:
            client.write(upd)
        (status,) = [v for k, v in exc.value.trailing_metadata() if k == "grpc-status-details-bin"]
        (detail,) = status_pb2.Status.FromString(status).details
        err = p4runtime_pb2.Error()
        assert detail.Unpack(err)
        assert err.canonical_code == code_pb2.PERMISSION_DENIED and "const" in err.message
        assert 10 in {e.priority for e in read("MyIngress.t_small")}


TEMPLATE = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; }
struct hs { h_t h; }
struct m_t { }
parser P(packet_in pk, out hs h, inout m_t m, inout standard_metadata_t s) {
    state start { pk.extract(h.h); transition accept; } }
control VC(inout hs h, inout m_t m) { apply { } }
control I(inout hs h, inout m_t m, inout standard_metadata_t s) {
    action set(bit<8> v) { h.h.b = v; }
    table t {
        key = { h.h.a : KIND; }
        actions = { set; }
        PROPS
        ENTRIES
    }
    apply { t.apply(); }
}
control E(inout hs h, inout m_t m, inout standard_metadata_t s) { apply { } }
control CC(inout hs h, inout m_t m) { apply { } }
control D(packet_out pk, in hs h) { apply { pk.emit(h.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


@pytest.mark.parametrize(
    "kind, props, entries, message, line",
    [
        ("ternary", "", "entries = { 1 : set(1); priority = 5: 2 : set(2); }",
         "the first entry must have a priority", 16),
        ("ternary", "", "entries = { priority = 1: 1 : set(1); 2 : set(2); }",
         r"entry priority 0 \(computed from the entry before it\) is out of range", 16),
        ("ternary", "", "entries = { priority = -3: 1 : set(1); }", "entry priority -3", 16),
        ("ternary", "", "const entries = { priority = 5: 1 : set(1); 2 : set(2) @priority(1); }",
         "cannot be mixed", 16),
        ("exact", "", "entries = { priority = 5: 1 : set(1); }", "only exact and lpm keys", 16),
        ("lpm", "", "const entries = { 1 : set(1) @priority(2); }", "only exact and lpm keys", 16),
        ("ternary", "", "const entries = { 1 : set(1) @priority(x); }", "@priority takes an integer", 16),
        ("ternary", "priority_delta = 0;", "entries = { 1 : set(1); }", "must be a positive", 15),
    ],
)
def test_refused_priorities_are_located(kind, props, entries, message, line) -> None:
    text = TEMPLATE.replace("KIND", kind).replace("PROPS", props).replace("ENTRIES", entries)
    with pytest.raises(P4Error, match=message) as exc:
        compile_text(text, "prio.p4")
    assert str(exc.value).startswith(f"prio.p4:{line}:")
