"""One switch under control: its P4Runtime connection and one object per P4 control."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from control_plane.aggregation import JobManager
from control_plane.forwarding import Forwarding
from control_plane.p4runtime_client import P4RuntimeClient, device_config_for
from control_plane.replay import Replay

REPO = Path(__file__).resolve().parent.parent
DEFAULT_P4 = REPO / "p4" / "innet.p4"


class SwitchController:
    """``SwitchController("127.0.0.1:50051").load()`` installs p4/innet.p4; ``.forwarding``,
    ``.jobs`` and ``.replay`` then install routes, aggregation jobs and replay tables, P4 objects
    by name."""

    def __init__(
        self,
        address: str,
        switch_mac: str | None = None,
        switch_ip: str | None = None,
        device_id: int = 1,
        election_id: int = 1,
        timeout: float = 10.0,
    ) -> None:
        self.client = P4RuntimeClient(address, device_id=device_id, election_id=election_id, timeout=timeout)
        self.forwarding = Forwarding(self.client)
        self.jobs = JobManager(self.client, switch_mac, switch_ip)
        self.replay = Replay(self.client)

    def load(self, p4_path: str | Path = DEFAULT_P4, defines: Mapping[str, str] | None = None, *,
             allow_nonportable: bool = False) -> None:
        """Compile ``p4_path`` here (preprocessed with ``defines``, as -D NAME=VALUE would) and make
        it the switch's pipeline (all state starts empty); ``allow_nonportable`` as in
        device_config_for."""
        p4info, device_config = device_config_for(p4_path, defines, allow_nonportable=allow_nonportable)
        self.client.set_pipeline(p4info, device_config)

    def attach(self) -> None:
        """Work with the pipeline the switch already runs."""
        self.client.fetch_pipeline()

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> SwitchController:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
