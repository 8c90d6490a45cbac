"""/healthz: is the database, the channel layer and the Celery broker reachable?"""
