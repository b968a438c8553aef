#ifndef IO_PROG_H
#define IO_PROG_H
#include <stdint.h>
enum { IO_PROG_CROSS = 0, IO_PROG_ECHO = 1 };
#define IO_PROG_ETH_TO_CPU 0x88b7
extern int io_prog_mode;         /* __atomic_store_n to change it while running */
extern uint32_t io_prog_cpu_port;
#endif
