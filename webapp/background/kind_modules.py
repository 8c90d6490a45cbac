"""Imports every module that defines work kinds, so each registers itself (one line each)."""

from webapp.background import evaluate_kind  # noqa: F401  evaluate: price assignments
