"""Errors a source can raise or catch."""
