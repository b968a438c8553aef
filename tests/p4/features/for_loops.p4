// `for` loops (P4-16 v1.2.5, "For statement"): the three-clause form (a declaration, assignments
// or nothing as initializations; comma-separated assignments or a method call as updates) and
// for-in over a range `lo .. hi` (both ends included, run-time bounds), a header stack and a
// list expression (evaluated once, before the first iteration); `break` and `continue` (also
// `break` inside a `switch`, `continue` still running the updates), nested loops, `return`
// from inside (nested) loops in a function, `exit` inside a loop. for_loops.stf has the results
// worked out by hand.
#include <core.p4>
#include <v1model.p4>

header in_t { bit<8> n; bit<8> lo; bit<8> hi; bit<8> skip; }
header elem_t { bit<8> v; }
header out_t {
    bit<8> sum_n; bit<16> pow2; bit<8> range_cnt; bit<8> range_sum; bit<8> stack_sum;
    bit<8> list_acc; bit<8> nested; bit<8> first_big; bit<8> pair; int<8> signed_sum;
    bit<8> odd; bit<8> tail;
}
struct headers_t { in_t inp; elem_t[3] elems; out_t res; }
struct meta_t { }

// the index of the first valid element above `limit`, or 0xFF: `return` leaves the loop
bit<8> first_over(in elem_t[3] st, in bit<8> limit) {
    for (bit<8> i = 0; i < 3; i = i + 1) {
        if (st[i].isValid() && st[i].v > limit) {
            return i;
        }
    }
    return 0xFF;
}

// the first i, j in 1..4 (i outer) with i * j == target as i ++ j (4 bits each), or 0:
// `return` from the inner loop leaves both
bit<8> find_pair(in bit<8> target) {
    for (bit<8> i in 1 .. 4) {
        for (bit<8> j in 1 .. 4) {
            if (i * j == target) {
                return (i << 4) | j;
            }
        }
    }
    return 0;
}

void bump(inout bit<8> v) { v = v + 1; }

parser CParser(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.inp);
        pkt.extract(hdr.elems.next);
        pkt.extract(hdr.elems.next);  // hdr.elems[2] stays invalid
        pkt.extract(hdr.res);
        transition accept;
    }
}
control CVerify(inout headers_t hdr, inout meta_t meta) { apply { } }
control CIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 2;

        // three clauses, the initializations and updates empty: 1 + 2 + ... + n
        bit<8> s = 0;
        bit<8> i = 1;
        for (; i <= hdr.inp.n; ) {
            s = s + i;
            i = i + 1;
        }
        hdr.res.sum_n = s;

        // assignments as initializations and updates (comma-separated); they outlive the loop
        bit<8> j;
        bit<16> x;
        for (j = 0, x = 1; j < hdr.inp.n; j = j + 1, x = x << 1) { }
        hdr.res.pow2 = x;

        // for-in over a run-time range; `continue` skips one value
        bit<8> cnt = 0;
        bit<8> rs = 0;
        for (bit<8> k in hdr.inp.lo .. hdr.inp.hi) {
            cnt = cnt + 1;
            if (k == hdr.inp.skip) {
                continue;
            }
            rs = rs + k;
        }
        hdr.res.range_cnt = cnt;
        hdr.res.range_sum = rs;

        // for-in over a header stack: each element (a copy, validity included), invalid ones too
        bit<8> ss = 0;
        for (elem_t e in hdr.elems) {
            if (e.isValid()) {
                ss = ss + e.v;
            } else {
                ss = ss + 100;
            }
        }
        hdr.res.stack_sum = ss;

        // for-in over a list expression: its elements are evaluated once, before the loop
        bit<8> a = hdr.inp.lo;
        bit<8> acc = 0;
        for (bit<8> y in {a, 7, a + 1}) {
            acc = acc * 3 + y;
            a = 100;
        }
        hdr.res.list_acc = acc;

        // nested loops: `break` leaves the inner loop only; `i` here shadows the i above
        bit<8> nest = 0;
        for (bit<8> i in 1 .. 3) {
            for (bit<8> j in 1 .. 3) {
                if (j > i) {
                    break;
                }
                nest = nest + 1;
            }
            nest = nest + 0x10;
        }
        hdr.res.nested = nest;

        hdr.res.first_big = first_over(hdr.elems, hdr.inp.skip);
        hdr.res.pair = find_pair(hdr.inp.n + 1);

        int<8> sgn = 0;
        for (int<8> v in -3 .. 2) {
            sgn = sgn + v;
        }
        hdr.res.signed_sum = sgn;

        // a declaration as initialization, a method call as update; `continue` runs the update,
        // `break` inside a switch leaves the loop
        bit<8> odd = 0;
        for (bit<8> m = 0; m < hdr.inp.n; bump(m)) {
            if ((m & 1) == 0) {
                continue;
            }
            switch (m) {
                5: { break; }
                default: { }
            }
            odd = odd + 1;
        }
        hdr.res.odd = odd;

        // a range up to the type's largest value; `exit` inside the loop ends ingress
        for (bit<8> t in 0 .. 255) {
            if (t == hdr.inp.n) {
                hdr.res.tail = t;
                exit;
            }
        }
        hdr.res.tail = 0x77;
    }
}
control CEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CCompute(inout headers_t hdr, inout meta_t meta) { apply { } }
control CDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.inp); pkt.emit(hdr.elems); pkt.emit(hdr.res); }
}

V1Switch(CParser(), CVerify(), CIngress(), CEgress(), CCompute(), CDeparser()) main;
