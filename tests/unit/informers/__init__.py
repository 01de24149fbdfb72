"""Tests of t9k_operator.informers (a package so test modules can share fakes)."""
