"""The dashboard: the landing page after login."""
