# The operator image: a slim Python with the package installed, run as non-root
# with a read-only root filesystem (see manifests/manager/deployment.yaml).
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY t9k_operator ./t9k_operator
RUN pip install --no-cache-dir --prefix=/install .

FROM python:3.11-slim
COPY --from=build /install /usr/local
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
USER 65532:65532
ENTRYPOINT ["t9k-operator"]
