"""P4Runtime controller (tables, multicast, registers, jobs); filled by the control-plane issue."""
