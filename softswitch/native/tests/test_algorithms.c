/* test_algorithms.c — ss_bits_put + ss_hash and ss_hash_result against vectors that
 * gen_vectors.py computes with softswitch/algorithms.py; plus known check values. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ss_runtime.h"

#define CHECK(x)                                                                     \
    do {                                                                             \
        if (!(x)) {                                                                  \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #x);    \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)

static int hexval(int c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; }

int main(int argc, char **argv) {
    const uint8_t check[] = "123456789";
    CHECK(ss_hash(SS_ALGO_CRC32, check, 72, NULL, 0) == 0xCBF43926u);
    CHECK(ss_hash(SS_ALGO_CRC16, check, 72, NULL, 0) == 0xBB3Du);
    CHECK(ss_hash(SS_ALGO_CRC32, NULL, 0, check, 9) == 0xCBF43926u);
    CHECK(ss_hash(SS_ALGO_CRC16_CUSTOM, check, 40, check + 5, 4) == 0xBB3Du);
    CHECK(ss_hash(SS_ALGO_RANDOM, NULL, 0, NULL, 0) != ss_hash(SS_ALGO_RANDOM, NULL, 0, NULL, 0));
    ss_bits b = {.nbits = 0};
    ss_bits_put(&b, 0x5, 3);
    ss_bits_put(&b, 0x1FF, 9);
    CHECK(b.nbits == 12 && b.buf[0] == 0xBF && (b.buf[1] & 0xF0) == 0xF0);
    /* saturates instead of writing past the buffer */
    for (int i = 0; i < 200; i++) ss_bits_put(&b, ~0ull, 64);
    CHECK(b.nbits == 8192);
    CHECK(ss_hash_result(10, 5, 0, 64) == 5);
    CHECK(ss_hash_result(10, 5, 3, 2) == 2);

    if (argc < 2) {
        fprintf(stderr, "usage: test_algorithms vectors.txt\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "r");
    CHECK(f);
    char line[8192];
    unsigned nh = 0, nr = 0;
    while (fgets(line, sizeof line, f)) {
        char *p = line, *end;
        if (line[0] == 'H') {
            p++;
            unsigned algo = (unsigned)strtoul(p, &end, 10); p = end;
            unsigned n = (unsigned)strtoul(p, &end, 10); p = end;
            ss_bits bits;
            bits.nbits = 0;
            memset(bits.buf, 0xEE, sizeof bits.buf);  /* garbage: ss_bits_put must not rely on zeros */
            for (unsigned i = 0; i < n; i++) {
                unsigned w = (unsigned)strtoul(p, &end, 10); p = end;
                unsigned long long v = strtoull(p, &end, 10); p = end;
                ss_bits_put(&bits, v, w);
            }
            while (*p == ' ') p++;
            uint8_t payload[256];
            uint32_t plen = 0;
            const uint8_t *pp = NULL;
            if (*p == '-') {
                p++;
            } else {
                while (*p && *p != ' ') {
                    payload[plen++] = (uint8_t)(hexval(p[0]) * 16 + hexval(p[1]));
                    p += 2;
                }
                pp = payload;
            }
            unsigned long long want = strtoull(p, &end, 10);
            uint64_t got = ss_hash(algo, bits.buf, bits.nbits, pp, plen);
            if (got != want) {
                fprintf(stderr, "mismatch: algo %u got %llu want %llu: %s", algo, (unsigned long long)got, want, line);
                return 1;
            }
            nh++;
        } else if (line[0] == 'R') {
            p++;
            unsigned long long h = strtoull(p, &end, 10); p = end;
            unsigned long long base = strtoull(p, &end, 10); p = end;
            unsigned long long mx = strtoull(p, &end, 10); p = end;
            unsigned w = (unsigned)strtoul(p, &end, 10); p = end;
            unsigned long long want = strtoull(p, &end, 10);
            CHECK(ss_hash_result(h, base, mx, w) == want);
            nr++;
        }
    }
    fclose(f);
    CHECK(nh > 1000 && nr > 1000);
    printf("algorithms: %u hash vectors and %u hash_result vectors match softswitch/algorithms.py\n", nh, nr);
    return 0;
}
