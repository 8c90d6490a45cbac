"""Operations: the management commands that install and start the server."""
