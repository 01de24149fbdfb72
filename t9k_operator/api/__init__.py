"""Pydantic models of every CRD (spec and status).

The single source of truth: the CRD YAML under manifests/crds is generated from them.
"""
