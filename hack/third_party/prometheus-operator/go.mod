// Wrapper module that pins prometheus-operator's module (version
// PROMETHEUS_OPERATOR_VERSION in hack/versions.env, with its checksum), whose
// source holds the monitoring.coreos.com CRDs: the tests install the
// ServiceMonitor and PrometheusRule CRDs from it so that the chart's and
// kustomize's monitoring objects apply to the local cluster. Nothing is built.
module t9k.dev/hack/prometheus-operator

go 1.26.0

require github.com/prometheus-operator/prometheus-operator v0.85.0
