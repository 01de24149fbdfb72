"""Tests of t9k_operator.api."""
