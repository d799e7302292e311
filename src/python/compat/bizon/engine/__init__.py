"""The engine is the binary's (C++). Provided here: the enums and models a source or a tool may
use (job and cursor statuses, pipeline statuses, runner settings); the rest of the original's
engine is refused at import with the reason (bizon._original)."""
