"""requests authenticators for the `authentication.type` values."""
