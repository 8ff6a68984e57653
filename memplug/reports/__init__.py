"""Reports over one database: status diagnostics, doctor, explain and purge."""
