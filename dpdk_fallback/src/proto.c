#include "proto.h"

const char *rp_status_name(int status)
{
    static const char *names[RP_STATUS_COUNT] = {
        "OK",    "MALFORMED",          "UNKNOWN_OP", "UNKNOWN_TABLE", "BAD_INDEX", "TOO_LARGE",
        "EMPTY", "NOT_SWITCH_SAMPLED", "NOT_CACHED", "BAD_VERSION",   "INTERNAL",
    };
    return status >= 0 && status < RP_STATUS_COUNT ? names[status] : "UNKNOWN_STATUS";
}

const char *rp_op_name(int op)
{
    switch (op) {
    case RP_OP_PUSH: return "PUSH";
    case RP_OP_PUSH_REPLY: return "PUSH_REPLY";
    case RP_OP_SAMPLE: return "SAMPLE";
    case RP_OP_SAMPLE_REPLY: return "SAMPLE_REPLY";
    case RP_OP_UPDATE_PRIORITY: return "UPDATE_PRIORITY";
    case RP_OP_UPDATE_REPLY: return "UPDATE_REPLY";
    case RP_OP_SET_PARAMS: return "SET_PARAMS";
    case RP_OP_SET_PARAMS_REPLY: return "SET_PARAMS_REPLY";
    case RP_OP_GET_PARAMS: return "GET_PARAMS";
    case RP_OP_GET_PARAMS_REPLY: return "GET_PARAMS_REPLY";
    case RP_OP_INFO: return "INFO";
    case RP_OP_INFO_REPLY: return "INFO_REPLY";
    case RP_OP_RESEND: return "RESEND";
    case RP_OP_CHECKPOINT: return "CHECKPOINT";
    case RP_OP_CHECKPOINT_REPLY: return "CHECKPOINT_REPLY";
    case RP_OP_ERROR: return "ERROR";
    default: return "UNKNOWN_OP";
    }
}
