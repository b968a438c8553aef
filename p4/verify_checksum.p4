/* verify_checksum.p4 -- IPv4 header checksum; ingress drops packets that fail it. */
#ifndef INNET_VERIFY_CHECKSUM_P4
#define INNET_VERIFY_CHECKSUM_P4

#include "include/headers.p4"

control InnetVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        verify_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.total_len,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr,
              hdr.ipv4_options.options },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

#endif
