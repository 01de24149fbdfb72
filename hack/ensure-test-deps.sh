#!/usr/bin/env bash
# System packages the tests use, installed from Debian's packages when missing:
# openssh-server and -client (the DeepSpeed/ColossalAI launch-path tests run
# real sshd instances on loopback) and openssl (the local cluster's PKI).
set -euo pipefail
missing=()
[ -x /usr/sbin/sshd ] || missing+=(openssh-server)
command -v ssh >/dev/null && command -v ssh-keygen >/dev/null || missing+=(openssh-client)
command -v openssl >/dev/null || missing+=(openssl)
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing ${missing[*]} (apt-get)" >&2
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
