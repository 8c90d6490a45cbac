"""Projects and memberships: everything a user creates belongs to a project."""
