"""The pods' network: a network namespace per pod with one address, joined
to the node's others by a bridge in a namespace of this test's, and, for a
node with Services whose endpoint is this machine, a link from that bridge
to this machine's own network."""

from __future__ import annotations

import fcntl
import re
import subprocess
from pathlib import Path
from typing import Any

# Pod addresses exist only inside this test's own network namespaces...
POD_NET = "10.244.77"
# ...unless the node reaches this machine (host_services): then its pod
# network is a /24 of these, one no other node on this machine (in any
# process) has, chosen under HOST_NET_LOCK.
HOST_NETS = tuple(f"10.244.{i}" for i in range(100, 250))
HOST_NET_LOCK = Path("/run/lock/t9k-podhost-net.lock")
HOST_LINK = re.compile(r"t9k(\d+)n\d+h")  # a Node's link in the root namespace


def run(*args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(args), check=True, text=True, capture_output=True, **kw)


def add_bridge(bridge_ns: str) -> None:
    """The node's bridge ``br0``, in a network namespace of its own."""
    run("ip", "netns", "add", bridge_ns)
    run("ip", "-n", bridge_ns, "link", "add", "br0", "type", "bridge")
    run("ip", "-n", bridge_ns, "link", "set", "br0", "up")


def link_to_host(bridge_ns: str, link: str) -> str:
    """A veth ``link`` from the pods' bridge to this machine's own network,
    on a pod network no other node here has: this machine is its ``.1``.
    Returns that network (its first three octets)."""
    HOST_NET_LOCK.parent.mkdir(parents=True, exist_ok=True)
    with open(HOST_NET_LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        remove_stale_host_links()
        taken = run("ip", "-4", "-o", "addr", "show").stdout
        taken += run("ip", "-4", "route", "show", "table", "all").stdout
        free = [n for n in HOST_NETS if not re.search(rf"\b{re.escape(n)}\.", taken)]
        if not free:
            raise AssertionError("no free pod network for a link to this machine")
        net = free[0]
        run("ip", "link", "add", link, "type", "veth", "peer", "name", "host", "netns",
            bridge_ns)  # fmt: skip
        run("ip", "addr", "add", f"{net}.1/24", "dev", link)
        run("ip", "link", "set", link, "up")
    run("ip", "-n", bridge_ns, "link", "set", "host", "master", "br0", "up")
    return net


def remove_stale_host_links() -> None:
    """Links to this machine left by nodes of processes that are gone."""
    for line in run("ip", "-o", "link", "show").stdout.splitlines():
        name = line.split(":")[1].strip().split("@")[0]
        match = HOST_LINK.fullmatch(name)
        if match and not Path(f"/proc/{match.group(1)}").exists():
            subprocess.run(["ip", "link", "del", name], capture_output=True)


def add_pod_network(bridge_ns: str, netns: str, ip: str) -> None:
    """The pod's network namespace ``netns``: its ``eth0`` with address
    ``ip``, a veth whose other end is on the bridge, and its loopback."""
    veth = f"v{ip.rsplit('.', 1)[1]}"
    run("ip", "netns", "add", netns)
    run(
        "ip", "-n", bridge_ns, "link", "add", veth, "type", "veth", "peer", "name", "eth0",
        "netns", netns,
    )  # fmt: skip
    run("ip", "-n", bridge_ns, "link", "set", veth, "master", "br0", "up")
    run("ip", "-n", netns, "addr", "add", f"{ip}/24", "dev", "eth0")
    run("ip", "-n", netns, "link", "set", "eth0", "up")
    run("ip", "-n", netns, "link", "set", "lo", "up")
