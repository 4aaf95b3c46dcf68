"""Starting or joining the Ray cluster a run scores on. A cluster the pack starts listens on
loopback only: a node whose address is 127.0.0.1 binds its servers (GCS, raylet, workers,
agents) to loopback, where a node started the default way on Linux serves on every interface.
Ray gives a new node that address when ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER`` is "0" as it is
imported (its switch between a machine-local and a cluster node), so the pack imports Ray under
that setting. Joining checks that the address answers first, as Ray retries for minutes."""
from __future__ import annotations

import ipaddress
import os
import socket
import sys
from typing import Any

LOCAL_NODE_SWITCH = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"   # "0": new nodes use the loopback address
ANSWER_TIMEOUT_S = 5.0


class ClusterError(RuntimeError):
    """No cluster to score on: one that would be open to the network, or one that cannot be joined."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an IP address, IPv4-mapped IPv6 included) is on the loopback network."""
    try:
        address = ipaddress.ip_address(host.split("%")[0])
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return (mapped or address).is_loopback


def host_and_port(address: str) -> tuple[str, int] | None:
    """``host:port`` (``ray://`` and ``[v6]`` forms too) split, or None for any other address."""
    rest = address.removeprefix("ray://")
    host, colon, port = rest.rpartition(":")
    if not colon or not host or not port.isdigit():
        return None
    return host.strip("[]"), int(port)


def import_ray(address: str | None) -> Any:
    """Ray, for a cluster started here (``address`` None) or joined at ``address``: imported so
    that a node it starts, or joins through a loopback address, takes the loopback address (the
    user's environment is left as it was once Ray has read it)."""
    parts = host_and_port(address) if address else None
    local = not address or (parts is not None and (is_loopback(parts[0]) or parts[0] == "localhost"))
    if not local or "ray" in sys.modules:
        import ray
        return ray
    before = os.environ.get(LOCAL_NODE_SWITCH)
    os.environ[LOCAL_NODE_SWITCH] = "0"
    try:
        import ray
    finally:
        if before is None:
            os.environ.pop(LOCAL_NODE_SWITCH, None)
        else:
            os.environ[LOCAL_NODE_SWITCH] = before
    return ray


def start_local_cluster(workers: int, **options: Any) -> None:
    """Start a Ray cluster of ``workers`` CPUs on this machine, its servers on loopback only;
    refused, before anything starts, where Ray would take a network address instead."""
    ray = import_ray(None)
    address = ray.util.get_node_ip_address()     # before init: the address a new node would take
    if not is_loopback(address):
        raise ClusterError(
            f"a local Ray cluster started now would listen on {address}, open to the network "
            f"(Ray was imported before opik-metrics could set {LOCAL_NODE_SWITCH}=0): start Ray "
            f"yourself with ray.init(), give the address of a cluster, or set "
            f"{LOCAL_NODE_SWITCH}=0 before importing ray")
    ray.init(num_cpus=workers, **options)


def join_cluster(address: str, **options: Any) -> None:
    """Connect to the Ray cluster at ``address``; one that does not answer, or refuses us (Ray's
    token authentication), is a ClusterError naming the address and Ray's reason."""
    ray = import_ray(address)
    parts = host_and_port(address)
    if parts is not None:
        try:
            socket.create_connection(parts, timeout=ANSWER_TIMEOUT_S).close()
        except OSError as exc:
            raise ClusterError(f"no Ray cluster answers at {address}: {exc.strerror or exc}") from None
    try:
        ray.init(address=address, **options)
    except ConnectionError as exc:
        cause: BaseException = exc
        while cause.__cause__ is not None:
            cause = cause.__cause__
        text = str(cause).strip()
        reason = text.splitlines()[-1] if text else type(cause).__name__
        raise ClusterError(f"could not join the Ray cluster at {address}: {reason}") from None
