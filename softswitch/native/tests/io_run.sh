#!/bin/sh
# io_run.sh — build and run the data-path I/O tests (io.c, netem.c) with ASan + UBSan.
#   tests/io_run.sh            netem unit test; io_test against the stub core and, when the
#                              runtime core builds, against the real one (1,000,000-frame flood)
#   [CORE=real|stub|agg] tests/io_run.sh bench [SECONDS] [mmsg|trafgen] [SIZE]
#                              -O2 build without sanitizers: forwarded packets/s over veth
#                              (agg: the 32-register program of tests/agg_prog.c)
# Needs root (a network namespace of its own, raw sockets).  Output in $OUT_DIR (default
# /tmp/ssio), nothing in the tree.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
NATIVE=$(dirname "$HERE")
OUT_DIR=${OUT_DIR:-/tmp/ssio}
mkdir -p "$OUT_DIR"
CC=${CC:-cc}
WARN="-std=gnu11 -Wall -Wextra -Werror -pthread -I$NATIVE/include -I$NATIVE/src -I$HERE"
SAN="-O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
IO_SRCS="$NATIVE/src/io.c $NATIVE/src/netem.c $NATIVE/src/offload.c"
TEST_SRCS="$HERE/io_test.c $HERE/io_prog.c"
CORE_SRCS=$(ls "$NATIVE"/src/*.c | grep -v -e '/io\.c$' -e '/netem\.c$' -e '/offload\.c$' || true)

if [ "${1:-}" = bench ]; then
    shift
    core=${CORE:-real}   # real | stub | agg (the real core running tests/agg_prog.c)
    case $core in
        stub) extra="$HERE/io_stub_core.c" ;;
        agg) extra="$CORE_SRCS $HERE/agg_prog.c -DIO_BENCH_AGG" ;;
        *) extra=$CORE_SRCS ;;
    esac
    # shellcheck disable=SC2086
    $CC $WARN -O2 -g -fno-omit-frame-pointer $TEST_SRCS $IO_SRCS $extra -lm -o "$OUT_DIR/io_bench_$core"
    exec "$OUT_DIR/io_bench_$core" bench "${1:-5}" "${2:-mmsg}" "${3:-64}"
fi

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# shellcheck disable=SC2086
$CC $WARN $SAN -D_GNU_SOURCE "$HERE/io_netem_test.c" "$NATIVE/src/netem.c" -o "$OUT_DIR/io_netem_test"
"$OUT_DIR/io_netem_test"
# shellcheck disable=SC2086
$CC $WARN $SAN $TEST_SRCS $IO_SRCS "$HERE/io_stub_core.c" -lm -o "$OUT_DIR/io_test_stub"
echo "== io_test against the stub core"
"$OUT_DIR/io_test_stub" test "${FLOOD:-1000000}"
# shellcheck disable=SC2086
if [ -n "$CORE_SRCS" ] && $CC $WARN $SAN $TEST_SRCS $IO_SRCS $CORE_SRCS -lm -o "$OUT_DIR/io_test_core" 2> "$OUT_DIR/core_build.log"; then
    echo "== io_test against the runtime core"
    "$OUT_DIR/io_test_core" test "${FLOOD:-1000000}"
else
    echo "== runtime core does not build yet (see $OUT_DIR/core_build.log); skipped"
fi
