"""Scapy layers of the aggregation header and values (docs/protocol.md), field for field as in
p4/include/headers.p4. Importing this module binds them to UDP port 47000."""

from __future__ import annotations

from scapy.fields import ByteField, FieldListField, IntField, ShortField, SignedIntField, XByteField
from scapy.layers.inet import UDP
from scapy.packet import Packet, bind_layers

from host_agents.agg_protocol import AGG_UDP_PORT, OP_DATA, VALUES_PER_PACKET


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
    name = "InnetAggValues"
    fields_desc = [
        FieldListField(
            "values",
            [0] * VALUES_PER_PACKET,
            SignedIntField("v", 0),
            count_from=lambda _pkt: VALUES_PER_PACKET,
        ),
    ]


bind_layers(UDP, AggHeader, dport=AGG_UDP_PORT)
bind_layers(UDP, AggHeader, sport=AGG_UDP_PORT)
bind_layers(AggHeader, AggValues)
