"""Celery: the app (`celery -A workers worker`), thin tasks, and the embedded worker."""

from workers.app import app

__all__ = ["app"]
