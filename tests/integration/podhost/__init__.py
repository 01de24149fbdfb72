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
* **Containers** each get a root file system of their own: an overlay whose
  lower layers are an :class:`Image` (whiteouts and added files) over this
  machine's root, and a private upper layer, as containerd's snapshots are.
  Init containers run one by one to completion before the others start; a
  failed one fails the pod. Each container has private mount, UTS, IPC and
  PID namespaces, the pod's hostname, kubelet's managed ``/etc/hosts``,
  ``/etc/hostname`` and ``/etc/resolv.conf``, and runs as root with the
  container runtime's default capability set (nothing else).
* **Env and command** follow kubelet: ``HOSTNAME`` and ``HOME``, the image's
  ``PATH``, the container's ``env`` (``value`` and the downward-API fields
  ``metadata.name``, ``metadata.namespace``, ``status.podIP``), and
  ``$(NAME)`` references expanded in env values, ``command`` and ``args``
  exactly as kubelet's expansion does (``$$`` is a literal ``$``; an unknown
  reference stays as written).
* **The network**: each pod has a network namespace of its own with one
  address, joined to the others by a bridge in a namespace of this test's
  (nothing is added to the machine's own network). Cluster DNS answers the
  names the headless Service gives (``<pod>.<subdomain>`` and the full
  ``...svc.cluster.local`` form) once a pod has its address; here the pods'
  ``/etc/hosts`` carry those names, and the resolver has no server to ask,
  so an unknown name fails at once as NXDOMAIN would.

Needs root (namespaces, mounts), ``ip`` (iproute2), ``unshare``/``nsenter``
and ``setpriv`` (util-linux), all present on a Debian machine.
"""

from tests.integration.podhost.host import Image, Node, PodRun, kubelet_expand

__all__ = ["Image", "Node", "PodRun", "kubelet_expand"]
