"""A fake GBIF occurrence search, following the documented API v1
(https://techdocs.gbif.org/en/openapi/v1/occurrence, "Occurrence search").

    GET /v1/occurrence/search?limit=<n>&offset=<n>
    -> {"offset": o, "limit": l, "endOfRecords": bool, "count": N, "results": [...], "facets": []}

As on the real service, `limit` defaults to 20 and a value above 300 is read as 300, and paging is
refused past offset 100,000 (offset + limit > 100,000 answers 400). `limit=0` returns the count
alone. Occurrences carry the usual interpreted fields (key, gbifID, datasetKey, scientificName,
coordinates, eventDate, ...).

Off-contract, answered 400: a query parameter other than limit/offset, a non-integer or negative
value, and any Authorization header (the search is public; the source sends no credentials).
"""

from __future__ import annotations

from fake_server import FakeServer, OffContract, Response

MAX_LIMIT = 300
MAX_OFFSET = 100_000
SPECIES = [
    ("Passer domesticus (Linnaeus, 1758)", "Animalia", "Chordata", "Aves"),
    ("Quercus robur L.", "Plantae", "Tracheophyta", "Magnoliopsida"),
    ("Vulpes vulpes (Linnaeus, 1758)", "Animalia", "Chordata", "Mammalia"),
    ("Amanita muscaria (L.) Lam.", "Fungi", "Basidiomycota", "Agaricomycetes"),
]


def occurrence(i: int) -> dict:
    name, kingdom, phylum, klass = SPECIES[i % len(SPECIES)]
    key = 4_000_000_000 + i
    return {
        "key": key,
        "datasetKey": "50c9509d-22c7-4a22-a47d-8c48425ef4a7",
        "publishingOrgKey": "28eb1a3f-1c15-4a95-931a-4af90ecb574d",
        "installationKey": "997448a8-f762-11e1-a439-00145eb45e9a",
        "publishingCountry": "US",
        "protocol": "DWC_ARCHIVE",
        "basisOfRecord": "HUMAN_OBSERVATION",
        "occurrenceStatus": "PRESENT",
        "scientificName": name,
        "kingdom": kingdom,
        "phylum": phylum,
        "class": klass,
        "taxonKey": 2_000_000 + i % len(SPECIES),
        "decimalLatitude": round(40 + (i % 1000) / 100, 4),
        "decimalLongitude": round(-3 + (i % 700) / 100, 4),
        "countryCode": "ES",
        "eventDate": f"2024-{1 + i % 12:02d}-{1 + i % 28:02d}T10:00:00",
        "year": 2024,
        "month": 1 + i % 12,
        "day": 1 + i % 28,
        "issues": ["COORDINATE_ROUNDED"] if i % 3 == 0 else [],
        "lastInterpreted": "2024-06-01T12:00:00.000+00:00",
        "license": "http://creativecommons.org/licenses/by/4.0/legalcode",
        "gbifID": str(key),
    }


class FakeGbif(FakeServer):
    def __init__(self, count: int = 2500):
        super().__init__()
        self.count = count
        #: Indexes whose occurrences come without "key" (and those in `no_ids` without gbifID).
        self.no_key: set[int] = set()
        self.no_ids: set[int] = set()
        self.route("GET", "/v1/occurrence/search", self.search)

    def record(self, i: int) -> dict:
        data = occurrence(i)
        if i in self.no_key or i in self.no_ids:
            del data["key"]
        if i in self.no_ids:
            del data["gbifID"]
        return data

    def search(self, request):
        if request.path.rstrip("/") != "/v1/occurrence/search":
            raise OffContract(f"unknown path {request.path}", status=404)
        if "authorization" in request.headers:
            raise OffContract("the occurrence search takes no credentials")
        self.only_params(request, {"limit", "offset"})
        limit = min(self.int_param(request, "limit", 20, low=0), MAX_LIMIT)
        offset = self.int_param(request, "offset", 0)
        if offset + limit > MAX_OFFSET:
            raise OffContract(
                f"Max offset of {MAX_OFFSET} exceeded: {offset} + {limit}",
                body={"message": f"Max offset of {MAX_OFFSET} exceeded"},
            )
        end = min(offset + limit, self.count)
        return {
            "offset": offset,
            "limit": limit,
            "endOfRecords": offset + limit >= self.count,
            "count": self.count,
            "results": [self.record(i) for i in range(offset, end)],
            "facets": [],
        }

    def error_response(self, error: OffContract) -> Response:
        return Response(error.status, error.body or {"message": str(error)})
