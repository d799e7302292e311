"""What the authenticators share: requests' AuthBase (or a stand-in with its contract when
requests is missing), and the reading of a params object."""

from collections.abc import Mapping

try:
    from requests.auth import AuthBase
except ImportError:  # pragma: no cover - requests is bundled with the binary

    class AuthBase:
        def __call__(self, request):
            raise NotImplementedError("Auth hooks must be callable.")


def params_of(model, params, owner, attributes):
    """`params` as the authenticator reads it: a `model` instance as is, a mapping validated into
    one, any object that has every name in `attributes` as is (the original only reads them).
    Anything else, a bare token string say, is a TypeError: never a header built from the text
    of the wrong object."""
    if isinstance(params, model):
        return params
    if isinstance(params, Mapping):
        return model(**params)
    if params is not None and all(hasattr(params, name) for name in attributes):
        return params
    raise TypeError(f"{owner}(params=...) takes a {model.__name__}, got {type(params).__name__}")
