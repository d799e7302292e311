"""Source framework: AbstractSource, the record models, config classes and authentication."""
