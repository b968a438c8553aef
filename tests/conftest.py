"""Shared pytest fixtures and marker handling.

Markers (declared in pyproject.toml):
- `netns`: needs root and `ip netns`; skipped with the reason when unavailable.
- `stf`: P4 packet tests; `make bmv2-test` runs only these.

Fixtures:
- `netns_ok`: skips the test unless namespaces work here.
- `netns`: a fresh network namespace (`topologies.netns.NetNS`), deleted after the test.
- `veth_ns`: a veth pair whose `ns_if` end is inside a fresh namespace and whose `host_if` end
  is in the root namespace (where the switch opens it); both deleted after the test.
"""

from __future__ import annotations

import pytest

from topologies.netns import (
    NetNS,
    VethPair,
    cleanup_all,
    create_namespace,
    create_veth_pair,
    netns_unavailable,
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    netns_reason: str | None = None
    netns_checked = False
    for item in items:
        if item.get_closest_marker("netns"):
            if not netns_checked:  # probing creates a namespace: do it once, and only if needed
                netns_reason, netns_checked = netns_unavailable(), True
            if netns_reason:
                item.add_marker(pytest.mark.skip(reason=netns_reason))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    cleanup_all()  # anything a crashed fixture left behind


@pytest.fixture
def netns_ok() -> None:
    reason = netns_unavailable()
    if reason:
        pytest.skip(reason)


@pytest.fixture
def netns(request: pytest.FixtureRequest, netns_ok: None) -> NetNS:
    ns = create_namespace()
    request.addfinalizer(ns.delete)
    return ns


@pytest.fixture
def veth_ns(request: pytest.FixtureRequest, netns: NetNS) -> VethPair:
    pair = create_veth_pair(peer_ns=netns)
    request.addfinalizer(pair.delete)  # runs before the namespace's finalizer (LIFO)
    return pair
