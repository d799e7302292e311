"""A fake Slack incoming webhook, following Slack's documented webhook contract ("Sending messages
using incoming webhooks", the 2016 changelog "Improving error conditions for incoming webhooks",
"Rate limits", and the 40,000-character limit on a message's `text`).

    POST /services/<team id>/<channel id>/<token>
    Content-Type: application/json
    {"text": "...", ...}
    -> 200, text/plain body "ok"

One webhook is issued per fake (``server.webhook_url``); the path's three parts are what Slack
generates, and the token is the secret part. Answers, as Slack gives them (text/plain bodies):

* an unknown webhook path: 404 ``no_service``;
* a method other than POST: 405 (off-contract);
* a body that is not a JSON object, or not UTF-8, or a Content-Type other than JSON:
  400 ``invalid_payload``;
* no ``text`` (and no ``blocks``), or an empty one: 400 ``no_text``;
* a ``text`` over 40,000 characters: Slack truncates it; here it is a violation;
* a top-level key a webhook message does not take: 400 ``invalid_payload``.

Off-contract requests are recorded in ``violations``, as every fake does (fake_server.py). The
fake also records as a violation a text whose ``&``, ``<`` or ``>`` are not escaped (Slack reads
``<...>`` as a link or mention and ``&`` starts an entity), since the client promises to escape.

Faults on demand: ``hang(seconds)`` (answer nothing for that long), ``fail(status, error)``
(``500 rollup_error`` by default), ``rate_limit(retry_after)`` (429 with ``Retry-After``, as
Slack's rate limiter answers). ``texts()`` gives the accepted messages' texts, in order.

Standard library only.
"""

from __future__ import annotations

import json
import re

from fake_server import Fault, FakeServer, OffContract, Request, Response

#: Top-level fields a message sent through an incoming webhook may carry.
MESSAGE_FIELDS = {
    "text", "blocks", "attachments", "mrkdwn", "thread_ts", "reply_broadcast", "username",
    "icon_emoji", "icon_url", "channel", "unfurl_links", "unfurl_media", "parse", "link_names",
    "metadata",
}
TEXT_LIMIT = 40_000
PATH = "/services/T0FAKETEAM/B0FAKECHAN/"
TOKEN = "fakeSlackToken0123456789ab"
#: A bare & that does not start &amp; &lt; &gt;, or a raw < or >.
UNESCAPED = re.compile(r"&(?!amp;|lt;|gt;)|[<>]")


class FakeSlack(FakeServer):
    gzip = False

    def __init__(self):
        super().__init__()
        self.accepted: list[dict] = []
        self.route("POST", "/services", self._post)
        for method in ("GET", "PUT", "PATCH", "DELETE"):
            self.route(method, "/services", self._wrong_method)

    @property
    def webhook_path(self) -> str:
        return PATH + TOKEN

    @property
    def webhook_url(self) -> str:
        return self.url + self.webhook_path

    # -- faults ------------------------------------------------------------------------------

    # A faulted request is checked all the same: `when` records its violations, then lets the
    # fault apply.

    def hang(self, seconds: float = 60, times: int | None = None):
        """Holds each matching request `seconds` before answering (past any client timeout)."""
        self.inject(PATH, Fault(delay=seconds, status=200, body="ok"), times=times,
                    when=self._checked)

    def fail(self, status: int = 500, error: str = "rollup_error", times: int | None = None):
        self.inject(PATH, Fault(status=status, body=error, headers={"Content-Type": "text/plain"}),
                    times=times, when=self._checked)

    def rate_limit(self, retry_after: int = 1, times: int | None = 1):
        self.inject(PATH, Fault(status=429, body="rate_limited",
                                headers={"Retry-After": str(retry_after),
                                         "Content-Type": "text/plain"}),
                    times=times, when=self._checked)

    def texts(self) -> list[str]:
        with self._lock:
            return [message["text"] for message in self.accepted]

    # -- the webhook -------------------------------------------------------------------------

    def error_response(self, error: OffContract) -> Response:
        return Response(error.status, error.body or "invalid_payload",
                        {"Content-Type": "text/plain"})

    def _wrong_method(self, request: Request):
        raise OffContract(f"{request.method} is not how a webhook is called", status=405,
                          body="invalid_method")

    def _checked(self, request: Request) -> bool:
        try:
            self._message(request)
        except OffContract as error:
            # Called with the server's lock held (fault selection).
            self.violations.append(f"{request.method} {request.path}: {error}")
        return True

    def _post(self, request: Request):
        message = self._message(request)
        with self._lock:
            self.accepted.append(message)
        return Response(200, "ok", {"Content-Type": "text/plain"})

    def _message(self, request: Request) -> dict:
        """The request's message, or OffContract for what Slack would refuse."""
        if request.method != "POST":
            self._wrong_method(request)
        if request.path != self.webhook_path:
            raise OffContract(f"unknown webhook {request.path}", status=404, body="no_service")
        if request.query:
            raise OffContract(f"unexpected query {sorted(request.query)}")
        content_type = request.headers.get("content-type", "")
        if content_type.split(";")[0].strip().lower() != "application/json":
            raise OffContract(f"Content-Type {content_type!r}, expected application/json")
        try:
            message = json.loads(request.body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as error:
            raise OffContract(f"body is not UTF-8 JSON: {error}") from None
        if not isinstance(message, dict):
            raise OffContract("body is not a JSON object")
        unknown = set(message) - MESSAGE_FIELDS
        if unknown:
            raise OffContract(f"fields a webhook message does not take: {sorted(unknown)}")
        text = message.get("text")
        if "blocks" not in message and (not isinstance(text, str) or not text.strip()):
            raise OffContract("no text", body="no_text")
        if isinstance(text, str):
            if len(text) > TEXT_LIMIT:
                raise OffContract(f"text of {len(text)} characters; Slack keeps {TEXT_LIMIT}")
            bad = UNESCAPED.search(text)
            if bad:
                raise OffContract(f"unescaped {bad.group(0)!r} at {bad.start()} in the text")
        return message
