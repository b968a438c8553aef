"""Scapy layers of the aggregation header and values (docs/protocol.md), field for field as in
p4/include/headers.p4. Importing this module binds them to UDP port 47000."""

from __future__ import annotations

from scapy.fields import ByteField, FieldListField, IntField, ShortField, SignedIntField, XByteField
from scapy.layers.inet import UDP
from scapy.packet import Packet, bind_layers

from host_agents.agg_protocol import (
    AGG_UDP_PORT,
    DEFAULT_VALUES_PER_PACKET,
    OP_DATA,
    SUPPORTED_VALUES_PER_PACKET,
)


class AggHeader(Packet):
    name = "InnetAgg"
    fields_desc = [
        ByteField("op", OP_DATA),
        XByteField("flags", 0),
        ByteField("job_id", 0),
        ByteField("worker_id", 0),
        ShortField("slot", 0),
        ShortField("round", 0),
        ByteField("next_exp", 0),
        ByteField("reserved", 0),
        ShortField("count", 1),
        IntField("bitmap", 0),
        IntField("chunk", 0),
        IntField("version_lo", 0),
        IntField("version_hi", 0),
    ]


class AggValues(Packet):
    """The int32 values: as many as the rest of the packet holds (the width is the P4 program's
    compile-time AGG_VALUES_PER_PACKET; a layer built without values has the default width's
    zeros)."""

    name = "InnetAggValues"
    fields_desc = [
        FieldListField(
            "values",
            [0] * DEFAULT_VALUES_PER_PACKET,
            SignedIntField("v", 0),
            max_count=max(SUPPORTED_VALUES_PER_PACKET),  # scapy stops at 100 items by default
        ),
    ]


bind_layers(UDP, AggHeader, dport=AGG_UDP_PORT)
bind_layers(UDP, AggHeader, sport=AGG_UDP_PORT)
bind_layers(AggHeader, AggValues)
