"""What of the original bizon 0.6.4's Python package this one does not provide, and why.

Importing a module or a name the original has and this package leaves out raises ImportError with
the reason and what to do instead, rather than Python's bare "No module named" (a module path the
original never had still gets that). `bizon.connectors.sources.*`, the original's Python
connectors, are loaded from an installed original bizon when the source's virtualenv
(engine.runner.config.python_env) has one, so a custom source can subclass a built-in connector;
without one they are refused the same way. tests/e2e/test_compat_api.py checks these lists
against the real 0.6.4 package.
"""

import importlib.abc
import importlib.machinery
import os
import sys

# Every module of the original 0.6.4 package (relative to `bizon.`) outside
# connectors.sources, which is matched by prefix. Provided or not: the ones provided are served
# by the embedded finder before this one is asked.
ORIGINAL_MODULES = frozenset("""
__main__ alerting alerting.alerts alerting.models alerting.slack alerting.slack.config
alerting.slack.handler cli cli.main cli.result cli.utils common common.errors
common.errors.backoff common.errors.errors common.models connectors connectors.destinations
connectors.destinations.bigquery connectors.destinations.bigquery.src
connectors.destinations.bigquery.src.config connectors.destinations.bigquery.src.destination
connectors.destinations.bigquery.src.partitioning connectors.destinations.bigquery.src.table_naming
connectors.destinations.bigquery_streaming connectors.destinations.bigquery_streaming.src
connectors.destinations.bigquery_streaming.src.config
connectors.destinations.bigquery_streaming.src.destination
connectors.destinations.bigquery_streaming_v2 connectors.destinations.bigquery_streaming_v2.src
connectors.destinations.bigquery_streaming_v2.src.config
connectors.destinations.bigquery_streaming_v2.src.destination
connectors.destinations.bigquery_streaming_v2.src.proto_utils connectors.destinations.file
connectors.destinations.file.src connectors.destinations.file.src.config
connectors.destinations.file.src.destination connectors.destinations.logger
connectors.destinations.logger.src connectors.destinations.logger.src.config
connectors.destinations.logger.src.destination connectors.sources
destination destination.buffer destination.config destination.destination destination.models
engine engine.backend engine.backend.adapters engine.backend.adapters.sqlalchemy
engine.backend.adapters.sqlalchemy.backend engine.backend.adapters.sqlalchemy.config
engine.backend.backend engine.backend.config engine.backend.models engine.config engine.engine
engine.pipeline engine.pipeline.consumer engine.pipeline.models engine.pipeline.producer
engine.queue engine.queue.adapters engine.queue.adapters.kafka engine.queue.adapters.kafka.config
engine.queue.adapters.kafka.consumer engine.queue.adapters.kafka.queue
engine.queue.adapters.python_queue engine.queue.adapters.python_queue.config
engine.queue.adapters.python_queue.consumer engine.queue.adapters.python_queue.queue
engine.queue.adapters.rabbitmq engine.queue.adapters.rabbitmq.config
engine.queue.adapters.rabbitmq.consumer engine.queue.adapters.rabbitmq.queue engine.queue.config
engine.queue.queue engine.resolvers engine.resolvers.adapters engine.resolvers.adapters.env
engine.resolvers.adapters.gcp engine.resolvers.adapters.gcp.gsm engine.resolvers.config
engine.resolvers.resolver engine.runner engine.runner.adapters engine.runner.adapters.process
engine.runner.adapters.streaming engine.runner.adapters.thread engine.runner.config
engine.runner.runner monitoring monitoring.config monitoring.datadog monitoring.datadog.monitor
monitoring.monitor monitoring.noop monitoring.noop.monitor source source.auth
source.auth.authenticators source.auth.authenticators.abstract_oauth
source.auth.authenticators.abstract_token source.auth.authenticators.basic
source.auth.authenticators.cookies source.auth.authenticators.oauth source.auth.authenticators.token
source.auth.builder source.auth.config source.callback source.config source.cursor
source.discover source.models source.session source.source transform transform.config
transform.transform utils
""".split())

ENGINE = ("it is the original's Python engine (runners, queue, backend, config resolution); this "
          "binary's engine is C++ and runs the pipeline itself: `bizon run <config.yml>`")
_SOURCES = ("the built-in sources are C++ in this binary; to subclass the original's Python "
            "connector, install bizon==0.6.4 into a Python 3.11 virtualenv and name it in "
            "engine.runner.config.python_env, and bizon.connectors.sources is loaded from there")

# (module prefix, reason), the longest prefix that matches wins.
_REASONS = (
    ("engine", ENGINE),
    ("source.discover", "source discovery is the binary's (`bizon source list`, `bizon stream list`); "
                        "a custom source is found through source.source_file_path"),
    ("destination", "destinations are built into the binary (C++): records go to the pipeline's "
                    "`destination:`"),
    ("connectors", _SOURCES),
    ("connectors.sources", _SOURCES),
    ("connectors.destinations", "destinations are built into the binary (C++): records go to the "
                                "pipeline's `destination:`"),
    ("monitoring", "monitoring is configured in the pipeline's `monitoring:` block and run by the binary"),
    ("alerting", "alerting is configured in the pipeline's `alerting:` block and run by the binary"),
    ("transform", "`transforms:` are run by the binary"),
    ("cli", "the command line is the `bizon` binary"),
    ("__main__", "the command line is the `bizon` binary"),
    ("utils", "BIZON_ABSOLUTE_PATH, the installed package's folder, has no counterpart: this package "
              "is compiled into the binary"),
)


def reason_for(relative):
    """Why `bizon.<relative>` is not provided (the reason of its longest matching prefix)."""
    best, text = -1, ENGINE
    for prefix, reason in _REASONS:
        if (relative == prefix or relative.startswith(prefix + ".")) and len(prefix) > best:
            best, text = len(prefix), reason
    return text


def not_provided(what, reason):
    """The ImportError for a module or name of the original that is not provided."""
    return ImportError(f"{what} is not provided by the bizon binary's Python package: {reason} "
                       "(bizon's migration.md lists every difference from the original)")


def refuse_names(module, reasons):
    """A module-level __getattr__: a name in `reasons` raises not_provided(), any other name the
    usual AttributeError."""

    def __getattr__(name):
        reason = reasons.get(name)
        if reason is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        raise not_provided(f"{module}.{name}", reason)

    return __getattr__


def installed_original():
    """The `bizon` folder of an original bizon installed on sys.path (the user's virtualenv), or
    None. Only its connectors.sources are ever loaded from it."""
    for entry in sys.path:
        if isinstance(entry, str) and entry and os.path.isdir(os.path.join(entry, "bizon", "connectors", "sources")):
            return os.path.join(entry, "bizon")
    return None


class OriginalModuleFinder(importlib.abc.MetaPathFinder):
    """Last on sys.meta_path: asked only for what neither the embedded finder nor sys.path
    provides."""

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith("bizon."):
            return None
        relative = fullname[len("bizon."):]
        sources = relative in ("connectors", "connectors.sources") or relative.startswith("connectors.sources.")
        if relative == "connectors":
            folder = installed_original()
            if folder is not None:
                spec = importlib.machinery.PathFinder.find_spec(fullname, [folder])
                if spec is not None:
                    return spec
        elif sources and installed_original() is not None:
            return None  # sys.path's finder looked in the original's folder: it does not exist there.
        if sources or relative in ORIGINAL_MODULES:
            error = not_provided(fullname, reason_for(relative))
            error.name = fullname
            raise error
        return None


def install():
    if not any(isinstance(finder, OriginalModuleFinder) for finder in sys.meta_path):
        sys.meta_path.append(OriginalModuleFinder())
