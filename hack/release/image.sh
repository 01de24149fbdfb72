#!/usr/bin/env bash
# make image IMG=...: build the Dockerfile with whichever of docker, podman or
# buildah is present and works (a docker client without a daemon does not).
# BUILDER=docker|podman|buildah picks one; BASE=... overrides the Dockerfile's
# base image: BASE=debootstrap makes it here from Debian's packages (the base
# hack/release/rootfs debootstraps, imported as localhost/t9k-base:<its key>), for a
# machine that cannot reach a registry. Without any builder, hack/release/rootfs
# makes the same image's root filesystem from Debian's packages.
#
# hack/release/image.sh --push IMAGE [DEST] (make docker-push): push IMAGE with the
# same builder, to its registry, or to DEST where the builder takes one
# (podman and buildah: a transport such as oci:DIR or docker://HOST/NAME).
set -euo pipefail
push=""
if [ "${1:-}" = --push ]; then push=1; shift; fi
img="${1:?usage: hack/release/image.sh [--push] IMAGE [DEST]}"
dest="${2:-}"
cd "$(dirname "$0")/../.."
build_args=()

works() {
  case "$1" in
    docker) command -v docker >/dev/null && docker info >/dev/null 2>&1 ;;
    podman) command -v podman >/dev/null && podman info >/dev/null 2>&1 ;;
    buildah) command -v buildah >/dev/null && buildah info >/dev/null 2>&1 ;;
    *) echo "unknown builder $1 (docker, podman or buildah)" >&2; return 2 ;;
  esac
}

builder="${BUILDER:-}"
if [ -z "$builder" ]; then
  for candidate in docker podman buildah; do
    if works "$candidate"; then builder="$candidate"; break; fi
  done
elif ! works "$builder"; then
  echo "image: $builder is not usable here ($builder info fails)" >&2
  exit 1
fi
if [ -z "$builder" ]; then
  echo "image: none of docker (with a daemon), podman or buildah works here." >&2
  echo "  install one (apt-get install buildah), or make the image's root filesystem" >&2
  echo "  from Debian's packages: python3 -m hack.release.rootfs build" >&2
  exit 1
fi
if [ -n "$push" ]; then
  echo "image: pushing $img${dest:+ to $dest} with $builder" >&2
  case "$builder" in
    docker)
      if [ -n "$dest" ]; then echo "image: docker pushes to IMG's registry only (no DEST)" >&2; exit 2; fi
      docker push "$img" ;;
    podman) podman push "$img" ${dest:+"$dest"} ;;
    buildah) buildah push "$img" ${dest:+"$dest"} ;;
  esac
  exit 0
fi
base="${BASE:-}"
if [ "$base" = debootstrap ]; then
  folder="$(python3 -m hack.release.rootfs base)"
  base="localhost/t9k-base:$(basename "$folder")"
  path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
  if [ "$builder" = buildah ]; then have=(buildah inspect --type image); else have=("$builder" image inspect); fi
  if ! "${have[@]}" "$base" >/dev/null 2>&1; then
    echo "image: importing $folder/root as $base" >&2
    case "$builder" in
      docker|podman) tar -C "$folder/root" -c . | "$builder" import --change "ENV PATH=$path" - "$base" >/dev/null ;;
      buildah)
        ctr="$(buildah from scratch)"
        trap 'buildah rm "$ctr" >/dev/null 2>&1 || true' EXIT
        cp -a "$folder/root/." "$(buildah mount "$ctr")/"
        buildah config --env "PATH=$path" "$ctr"
        buildah commit -q "$ctr" "$base" >/dev/null
        ;;
    esac
  fi
fi
[ -z "$base" ] || build_args+=(--build-arg "BASE=$base")
# This machine's CA bundle, when pip is told to trust one here (an egress
# proxy's): mounted for the RUN steps only, never stored in the image. Docker
# builds have no such mount; it needs no CA of its own on an ordinary machine.
ca="${PIP_CERT:-${SSL_CERT_FILE:-}}"
if [ -n "$ca" ] && [ -f "$ca" ] && [ "$builder" != docker ]; then
  build_args+=(--volume "$ca:/run/t9k-build/ca.crt:ro" --build-arg PIP_CERT=/run/t9k-build/ca.crt)
fi
# Without an OCI runtime (runc, crun), as in a container without one, the RUN
# steps of buildah and podman run under chroot, on the host's network.
if [ "$builder" != docker ] && [ -z "${BUILDAH_ISOLATION:-}" ] \
    && ! command -v runc >/dev/null && ! command -v crun >/dev/null; then
  build_args+=(--isolation chroot)
fi
echo "image: building $img with $builder" >&2
case "$builder" in
  docker) docker build "${build_args[@]}" -t "$img" . ;;
  podman) podman build "${build_args[@]}" -t "$img" . ;;
  buildah) buildah build "${build_args[@]}" -t "$img" . ;;
esac
