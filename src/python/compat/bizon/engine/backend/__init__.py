"""Backend enums and table names (the backend itself is the binary's)."""
