"""Run a pod's containers on this machine the way kubelet and a container
runtime would, for the programs the operator's pods run (sshd, the launch
scripts, the launchers).

What is reproduced, and from where:

* **Volumes** are laid out as kubelet lays them out. A Secret volume, and an
  emptyDir of medium ``Memory``, is a tmpfs whose root is ``drwxrwxrwt``; a
  ConfigMap volume or a disk emptyDir is a directory of mode 0777 (kubelet's
  emptyDir ``setupDir``). Secret and ConfigMap payloads are written by the
  AtomicWriter's scheme: a ``..<timestamp>`` directory (0755) holding the
  files with their ``defaultMode``/``items[].mode``, a ``..data`` symlink to
  it, and each visible name a symlink into ``..data``. A ``subPath`` mount
  binds the file the path resolves to (so it does not follow later updates),
  and ``readOnly`` mounts are read-only binds. A PersistentVolumeClaim is a
  directory of this machine standing for its bound volume (``Node.add_claim``),
  bound in, read-only when the volume says ``readOnly``.
* **Projected ServiceAccount tokens** are real when the :class:`Node` is
  given a client of the cluster's API server (``Node(..., client=)``): a
  TokenRequest as kubelet's projected volume makes it (pkg/volume/projected,
  pkg/kubelet/token) for the pod's ``serviceAccountName`` (``default``),
  with the source's ``audience`` (none: the API server's own audiences),
  its ``expirationSeconds`` (3600 when unset, as the API defaults it) and a
  ``boundObjectRef`` to the pod's name and uid, so the pod must be the API's
  (with ``metadata.uid``) and a TokenReview names it in its user's extra
  ``authentication.kubernetes.io/pod-name``/``pod-uid``. The file has the
  volume's ``defaultMode``, unless the pod has an FsUser (the one
  ``runAsUser`` all its containers set, kubelet's ``FsUserFrom``) or an
  ``fsGroup``: then 0600, owned by the FsUser, and 0640 after ``fsGroup``'s
  ownership. Without a client the file holds a placeholder. Not reproduced:
  kubelet's refresh of the token at 80% of its lifetime.
* **Containers** each get a root file system of their own: an overlay whose
  lower layers are an :class:`Image` (whiteouts and added files) over this
  machine's root, and a private upper layer, as containerd's snapshots are.
  The pod's containers share its network, IPC and
  UTS namespaces (held by a sandbox process, as the runtime's pause
  container holds them) and each has mount and PID namespaces of its own;
  they see the pod's hostname, kubelet's managed ``/etc/hosts``,
  ``/etc/hostname`` and ``/etc/resolv.conf``, runc's default ``/dev`` (a
  tmpfs with the default devices, a private devpts, and the pod's one
  64 MiB ``/dev/shm``, as containerd's CRI mounts into each container)
  and a read-only ``/sys``, with the container runtime's default
  capability set (nothing else). A mount path's symlinks are resolved
  within the container's root, as runc's securejoin does (the image's
  ``/var/run -> /run`` leads to the container's ``/run``).
* **The pod's lifecycle** follows kubelet (lifecycle.py names the source of
  each rule). Init containers start one by one, each once the one before has
  succeeded; a failed one starts nothing further. A native sidecar (an init
  container with ``restartPolicy: Always``) lets the next start once it has
  started (its exec ``startupProbe``, if any, has passed), runs beside the
  others, and is stopped once every regular container has exited and none
  is to restart, after them, in reverse order. Stopping a container is the
  runtime's: SIGTERM, then SIGKILL after the grace period (the pod's
  ``terminationGracePeriodSeconds``, 30 when unset). A container's first
  process is pid 1 of its PID namespace, so the kernel gives it SIGTERM only
  if it handles it: a bare ``sleep`` ends 137 after the grace period, a
  process that exits on SIGTERM ends 143. ``PodRun.delete()`` is a graceful
  deletion: the pod has its ``deletionTimestamp`` at once, and once its
  containers have stopped its phase is terminal (``Failed`` unless all
  exited 0). ``PodRun.status()`` is the pod's status as kubelet reports it:
  init containers' statuses in the spec's order, the others' sorted by
  name, not-yet-started ones waiting ``PodInitializing`` (``ContainerCreating``
  in a pod without init containers), exit reasons ``Completed``/``Error``,
  and the phase as kubelet's getPhase computes it. ``PodRun.logs()`` is a
  container's own stdout and stderr. Not reproduced: restarts (a container
  kubelet would restart stays as it ended), readiness and liveness probes,
  and preStop hooks.
* **securityContext**: the container's ``runAsUser``/``runAsGroup`` over the
  pod's, the pod's ``supplementalGroups`` and ``fsGroup`` as supplementary
  groups (root otherwise, as these images name no user; an unknown uid gets
  gid 0), ``runAsNonRoot`` refusing root; and kubelet's ``fsGroup``
  ownership of the pod's emptyDir, Secret, ConfigMap and projected volumes.
* **Env and command** follow kubelet: ``HOSTNAME`` and ``HOME`` (the user's,
  from the image's /etc/passwd), the image's ``PATH``, the container's
  ``envFrom`` (ConfigMaps and Secrets, with ``prefix``; a missing
  non-optional one fails the pod), then its ``env`` (``value`` and the
  downward-API fields ``metadata.name``, ``metadata.namespace``,
  ``status.podIP``), and ``$(NAME)`` references expanded in env values,
  ``command`` and ``args`` exactly as kubelet's expansion does (``$$`` is a
  literal ``$``; an unknown reference stays as written).
* **The network**: each pod has a network namespace of its own with one
  address, joined to the others by a bridge in a namespace of this test's
  (nothing is added to the machine's own network, but for the Service
  stand-in below). Cluster DNS answers the names the headless Service gives
  (``<pod>.<subdomain>`` and the full ``...svc.cluster.local`` form) once a
  pod has its address, and the names of every headless Service added to the
  node (``Node.add``) that selects pods (``name``, ``name.namespace``,
  ``name.namespace.svc[.cluster.local]``, to each pod it selects that has an
  address); here the pods' ``/etc/hosts`` carry those names, and
  the resolver has no server to ask, so an unknown name fails at once as
  NXDOMAIN would.
* **A Service whose endpoint is this machine** (``Node(...,
  host_services=["name.namespace"])``, for the operator run as a process
  here): cluster DNS gives the Service's names (``name.namespace.svc``,
  ``...svc.cluster.local``; ``name.namespace`` and, in the pod's own
  namespace, ``name`` through the search path) and kube-proxy takes a
  connection to its port to the endpoint. Here a veth joins the pods'
  bridge to this machine's root network namespace, this machine being
  ``Node.host_address`` (the ``.1`` of the node's pod network), and every
  pod's ``/etc/hosts`` maps those names to it; the Service's port is the
  process's own (no port translation), so the process listens on 0.0.0.0.
  Such a node's pod network is a /24 of 10.244.100-249 that no address or
  route of this machine has, chosen under a lock file, so nodes of several
  test processes never clash; ``close()`` removes the link.

Needs root (namespaces, mounts), ``ip`` (iproute2), ``unshare``/``nsenter``
and ``setpriv`` (util-linux), all present on a Debian machine.
"""

from tests.integration.podhost.container_config import kubelet_expand
from tests.integration.podhost.host import Node
from tests.integration.podhost.image import Image
from tests.integration.podhost.pod import PodRun

__all__ = ["Image", "Node", "PodRun", "kubelet_expand"]
