"""Authentication for HTTP sources: `authentication: {type, params}` and the authenticators."""
