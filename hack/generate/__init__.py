"""The generators of the committed manifests: the CRDs (:mod:`.crds`), the
RBAC (:mod:`.rbac`), the install forms built from manifests/ (:mod:`.install`:
kustomize, the Helm chart, deploy/install.yaml) and the pinned pod schema the
CRDs embed (:mod:`.openapi`). Each runs as ``python -m hack.generate.<name>``
from the repository root (``make manifests``)."""
