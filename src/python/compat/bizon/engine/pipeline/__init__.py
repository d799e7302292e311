"""Pipeline statuses (the producer and consumer are the binary's)."""
