/* Built when libdpdk is not available: the DPDK I/O path says so instead of existing. */
#include <stdio.h>

#include "io.h"

struct rs_io *rs_io_dpdk_open(const struct rs_io_config *cfg, char *err, size_t errlen)
{
    (void)cfg;
    snprintf(err, errlen,
             "this replay_server was built without DPDK (install libdpdk-dev and pkg-config, "
             "then rebuild)");
    return NULL;
}
