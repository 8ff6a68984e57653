"""Team memory: the exchange with the sync server, and its PostgreSQL client."""
