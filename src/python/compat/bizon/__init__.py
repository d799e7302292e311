"""The `bizon` package as custom sources see it inside the C++ bizon binary.

This is a compatibility layer written for the C++ re-implementation, not the original project's
code: it offers the module paths and classes that a custom source written for the original imports
(`bizon.source.source.AbstractSource`, `bizon.source.models.SourceRecord`, ...), with the same
behaviour where the engine relies on it. The engine itself is C++; nothing else of the original
package exists here.
"""

__version__ = "0.5.4+cpp"
