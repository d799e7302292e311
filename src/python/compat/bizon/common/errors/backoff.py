"""HTTP errors that mean "retry later": raised for 429 and 5xx answers."""

import requests


class BaseBackoffException(requests.exceptions.HTTPError):
    """An HTTPError carrying its request and response; the message names the URL, status and
    body unless one is given."""

    def __init__(self, request, response, error_message: str = ""):
        if not error_message:
            error_message = (f"Request URL: {request.url}, Response Code: {response.status_code}, "
                             f"Response Text: {response.text}")
        super().__init__(error_message, request=request, response=response)


class DefaultBackoffException(BaseBackoffException):
    """The retryable error of the OAuth token refresh."""
