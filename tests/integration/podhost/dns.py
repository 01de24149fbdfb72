"""Names as the pods see them: kubelet's managed /etc/hosts, /etc/hostname
and /etc/resolv.conf, and in the hosts file what cluster DNS would answer
(the pods' resolver has no server to ask, so an unknown name fails at once,
as NXDOMAIN would)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tests.integration.podhost.host import Node
    from tests.integration.podhost.pod import PodRun

CLUSTER_DOMAIN = "cluster.local"
KUBELET_HOSTS = [
    "# Kubernetes-managed hosts file.",
    "127.0.0.1\tlocalhost",
    "::1\tlocalhost ip6-localhost ip6-loopback",
    "fe00::0\tip6-localnet",
    "fe00::0\tip6-mcastprefix",
    "fe00::1\tip6-allnodes",
    "fe00::2\tip6-allrouters",
]


def resolv_conf(namespace: str) -> str:
    """kubelet's resolv.conf for a pod of ``namespace`` (ClusterFirst)."""
    return (
        f"search {namespace}.svc.{CLUSTER_DOMAIN} svc.{CLUSTER_DOMAIN} "
        f"{CLUSTER_DOMAIN}\nnameserver 127.0.0.53\noptions ndots:5\n"
    )


def write_hosts(run: PodRun) -> None:
    """The pod's hosts file: kubelet's, then the cluster's names as they are
    now. Written in place, as a bind-mounted file must be to be seen."""
    lines = list(KUBELET_HOSTS)
    if run.subdomain:
        fqdn = f"{run.hostname}.{run.subdomain}.{run.node.namespace}.svc.{CLUSTER_DOMAIN}"
        lines.append(f"{run.ip}\t{fqdn}\t{run.hostname}")
    else:
        lines.append(f"{run.ip}\t{run.hostname}")
    text = "\n".join([*lines, *cluster_lines(run.node)]) + "\n"
    with open(run.dir / "hosts", "a+") as f:
        f.seek(0)
        f.truncate()
        f.write(text)


def cluster_lines(node: Node) -> list[str]:
    """What cluster DNS answers for the node's pods: each pod's name under
    its subdomain, the headless Services' names, and the names of the
    Services whose endpoint is this machine."""
    lines = ["# Cluster DNS stand-in: the names the job's headless Service answers."]
    for p in node.pods:
        if p.ip and p.subdomain:
            fqdn = f"{p.hostname}.{p.subdomain}.{node.namespace}.svc.{CLUSTER_DOMAIN}"
            lines.append(f"{p.ip}\t{fqdn}\t{p.hostname}.{p.subdomain}")
    lines += _headless_service_lines(node)
    if node.host_services:
        lines.append("# Service stand-ins: Services whose endpoint is this machine.")
    for name, namespace in node.host_services:
        # What cluster DNS answers (the search path makes name.namespace
        # and, in the pod's own namespace, name work too).
        names = [f"{name}.{namespace}.svc.{CLUSTER_DOMAIN}", f"{name}.{namespace}.svc"]
        names.append(f"{name}.{namespace}")
        if namespace == node.namespace:
            names.append(name)
        lines.append("\t".join([str(node.host_address), *names]))
    return lines


def _headless_service_lines(node: Node) -> list[str]:
    """What cluster DNS answers for the headless Services added to the node
    (``add``) that select pods: each name, to the address of every pod it
    selects that has one (``publishNotReadyAddresses``: ready or not)."""
    lines = []
    for (kind, name), svc in sorted(node.objects.items()):
        spec = svc.get("spec") or {}
        selector = spec.get("selector") or {}
        if kind != "Service" or spec.get("clusterIP") != "None" or not selector:
            continue
        names = [
            f"{name}.{node.namespace}.svc.{CLUSTER_DOMAIN}",
            f"{name}.{node.namespace}.svc",
        ]
        names += [f"{name}.{node.namespace}", name]
        for p in node.pods:
            labels = (p.pod.get("metadata") or {}).get("labels") or {}
            if p.ip and all(labels.get(k) == v for k, v in selector.items()):
                lines.append("\t".join([p.ip, *names]))
    if lines:
        lines.insert(0, "# Headless Services added to the node, by the pods they select.")
    return lines
