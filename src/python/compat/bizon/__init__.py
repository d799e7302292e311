"""The `bizon` package as custom sources see it inside the C++ bizon binary.

This is a compatibility layer written for the C++ re-implementation, not the original project's
code: it offers the module paths and classes that a custom source written for the original imports
(`bizon.source.source.AbstractSource`, `bizon.source.models.SourceRecord`, ...), with the same
behaviour where a source relies on it. The engine itself is C++: what of the original's package
is left out is refused at import with the reason (bizon._original).
"""

from bizon import _original

__version__ = "0.5.4+cpp"

_original.install()
