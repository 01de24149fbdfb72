#!/usr/bin/env bash
# System packages the tests use, installed from Debian's packages when missing:
# openssh-server and -client, and pdsh (the DeepSpeed/ColossalAI launch-path
# tests run the pods' sshd and the launchers' transports for real), iproute2
# and util-linux (the pod host's network namespaces, mounts and capabilities),
# openssl (the local cluster's PKI), prometheus (its server and promtool:
# tests/integration/test_monitoring.py scrapes the operator with a real
# Prometheus and checks manifests/monitoring/rules.yaml with promtool; on a
# machine with systemd the package also starts its own service on :9090,
# which the test does not use), debootstrap (the operator image's root
# filesystem, hack/release/rootfs), buildah (`make image`, tested with a base
# made from Debian's packages), python3 (Debian's own: the GenericJob
# test's replicas run it as a plain Debian image would), python3-pip
# (hack/ensure-frameworks.py installs the frameworks the training tests import
# for Debian's python3), and openmpi-bin with python3-mpi4py (the MPIJob
# launch-path test runs a real mpirun all-reduce over the pods' sshd; `t9k
# run --local` of an MPIJob runs mpirun here), and chromium (the console's
# browser tests, tests/integration/test_console_browser.py, and
# `python -m hack.screenshots` drive /usr/bin/chromium headless with
# Playwright's Python package; Playwright's own browser download is never used).
set -euo pipefail
missing=()
[ -x /usr/sbin/sshd ] || missing+=(openssh-server)
command -v ssh >/dev/null && command -v ssh-keygen >/dev/null || missing+=(openssh-client)
command -v pdsh >/dev/null || missing+=(pdsh)
command -v ip >/dev/null || missing+=(iproute2)
command -v setpriv >/dev/null && command -v unshare >/dev/null || missing+=(util-linux)
command -v openssl >/dev/null || missing+=(openssl)
command -v prometheus >/dev/null && command -v promtool >/dev/null || missing+=(prometheus)
command -v debootstrap >/dev/null || missing+=(debootstrap)
command -v buildah >/dev/null || missing+=(buildah)
[ -x /usr/bin/python3 ] || missing+=(python3)
/usr/bin/python3 -m pip --version >/dev/null 2>&1 || missing+=(python3-pip)
command -v mpirun >/dev/null || missing+=(openmpi-bin)
/usr/bin/python3 -c 'import mpi4py' 2>/dev/null || missing+=(python3-mpi4py)
[ -x /usr/bin/chromium ] || missing+=(chromium)
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing ${missing[*]} (apt-get)" >&2
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
