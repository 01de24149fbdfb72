# The operator image: Debian's Python 3.11 with the package installed in a
# virtual environment, run as non-root with a read-only root filesystem (see
# manifests/manager/deployment.yaml).
#
# The base is plain Debian, so the image can be made from Debian's packages
# alone: `make image` builds this file with docker, podman or buildah, and
# hack/release/rootfs carries out the same instructions into a root filesystem
# (FROM debian:<suite>-slim is a debootstrap of that suite) for the tests that
# run the operator from it (tests/integration/test_in_cluster.py). Keep to the
# instructions hack/release/rootfs knows: ARG, FROM, RUN, COPY, ENV, WORKDIR, USER,
# ENTRYPOINT, CMD, LABEL.
ARG BASE=debian:bookworm-slim
FROM ${BASE}
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      python3 python3-venv ca-certificates \
 && rm -rf /var/lib/apt/lists/*
# A CA bundle pip is to trust, for a machine whose way out to PyPI needs one:
# hack/release/image.sh mounts this machine's for the build and names it here; it is
# not stored in the image.
ARG PIP_CERT
# The dependencies first, exactly as locked (make lock): every file's hash is
# checked and an unlocked dependency stops the build. Their layer outlives
# changes to the operator's code.
COPY requirements/operator.txt /tmp/requirements.txt
RUN python3 -m venv /opt/t9k-operator \
 && /opt/t9k-operator/bin/pip install --no-cache-dir --disable-pip-version-check \
      --require-hashes -r /tmp/requirements.txt \
 && rm /tmp/requirements.txt
# Then the operator itself, built with the locked setuptools and nothing more.
# Its console's scripts are built files in t9k_operator/console/static/ (make
# console-assets, which make image and make rootfs run first: no node in the
# image); the package's build backend stops here if they are missing.
COPY pyproject.toml README.md /src/
COPY t9k_operator /src/t9k_operator
RUN /opt/t9k-operator/bin/pip install --no-cache-dir --disable-pip-version-check \
      --no-deps --no-build-isolation /src \
 && /opt/t9k-operator/bin/pip check --disable-pip-version-check \
 && rm -rf /src
ENV PATH=/opt/t9k-operator/bin:$PATH PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
USER 65532:65532
ENTRYPOINT ["t9k-operator"]
