"""Models shared across the original's packages: the stream routing entries, a sync's metadata
and the errors sources raise."""
