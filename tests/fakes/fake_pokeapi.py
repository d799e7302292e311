"""A fake PokéAPI, following the documented v2 API (https://pokeapi.co/docs/v2, "Resource
Lists/Pagination").

    GET /api/v2/{pokemon,berry,item}[/]?offset=<n>&limit=<n>
    -> {"count": N, "next": url or null, "previous": url or null,
        "results": [{"name": ..., "url": ".../api/v2/<endpoint>/<id>/"}]}

The default page size is 20, as on the real API, and `next`/`previous` are absolute URLs built
like the real ones (``<root>/api/v2/pokemon?offset=20&limit=20``) on this server's address.

Off-contract, answered 400: a query parameter other than offset/limit, a non-integer or negative
value, and any Authorization header (the API is public and the source must send no credentials).
"""

from __future__ import annotations

from fake_server import FakeServer, OffContract

POKEMON = (
    "bulbasaur ivysaur venusaur charmander charmeleon charizard squirtle wartortle blastoise "
    "caterpie metapod butterfree weedle kakuna beedrill pidgey pidgeotto pidgeot rattata raticate "
    "spearow fearow ekans arbok pikachu raichu sandshrew sandslash nidoran-f nidorina nidoqueen "
    "nidoran-m nidorino nidoking clefairy clefable vulpix ninetales jigglypuff wigglytuff zubat "
    "golbat oddish gloom vileplume"
).split()
BERRIES = (
    "cheri chesto pecha rawst aspear leppa oran persim lum sitrus figy wiki mago aguav iapapa "
    "razz bluk nanab wepear pinap pomeg kelpsy qualot hondew"
).split()
ITEMS = (
    "master-ball ultra-ball great-ball poke-ball safari-ball net-ball dive-ball nest-ball "
    "repeat-ball timer-ball luxury-ball premier-ball dusk-ball heal-ball quick-ball cherish-ball "
    "potion antidote burn-heal ice-heal awakening paralyze-heal full-restore max-potion "
    "hyper-potion super-potion full-heal revive max-revive fresh-water"
).split()
DEFAULT_LIMIT = 20


class FakePokeApi(FakeServer):
    def __init__(self):
        super().__init__()
        self.resources = {"pokemon": POKEMON, "berry": BERRIES, "item": ITEMS}
        for endpoint in self.resources:
            self.route("GET", f"/api/v2/{endpoint}", self.resource_list)

    @property
    def root(self) -> str:
        return f"{self.url}/api/v2"

    def expected(self, endpoint: str) -> list[dict]:
        return [
            {"name": name, "url": f"{self.root}/{endpoint}/{i}/"}
            for i, name in enumerate(self.resources[endpoint], start=1)
        ]

    def resource_list(self, request):
        if "authorization" in request.headers:
            raise OffContract("PokéAPI takes no credentials")
        parts = request.path.strip("/").split("/")
        if len(parts) != 3:
            raise OffContract(f"not a resource list: {request.path}", status=404)
        endpoint = parts[2]
        self.only_params(request, {"offset", "limit"})
        offset = self.int_param(request, "offset", 0)
        limit = self.int_param(request, "limit", DEFAULT_LIMIT, low=1)
        items = self.expected(endpoint)
        count = len(items)
        nxt = f"{self.root}/{endpoint}?offset={offset + limit}&limit={limit}"
        prev = f"{self.root}/{endpoint}?offset={max(0, offset - limit)}&limit={limit}"
        return {
            "count": count,
            "next": nxt if offset + limit < count else None,
            "previous": prev if offset > 0 else None,
            "results": items[offset : offset + limit],
        }
