"""requests' AuthBase when requests is installed, else a stand-in with the same contract."""

try:
    from requests.auth import AuthBase
except ImportError:  # pragma: no cover - requests is a dependency of every HTTP source

    class AuthBase:
        def __call__(self, request):
            raise NotImplementedError("Auth hooks must be callable.")
