// PgTlsFields() on its own: engine/backend/backend_options.cc declares the backend's keys with it,
// and builds without libpq (fuzz/) need it without the client.
#include <string>
#include <utility>
#include <vector>

#include "postgres/postgres_client.h"

namespace bizon {

std::vector<FieldSpec> PgTlsFields() {
  auto path = [](std::string name, std::string description) {
    return FieldSpec{
        .name = std::move(name), .type = FieldType::kString, .description = std::move(description)};
  };
  return {
      {.name = "sslmode",
       .type = FieldType::kEnum,
       .description = "TLS to the server, as libpq's sslmode: disable, allow, prefer, require, "
                      "verify-ca (the certificate chains to sslrootcert) or verify-full (and "
                      "names the host). Unset: libpq's default (PGSSLMODE, else prefer).",
       .enum_values = {"disable", "allow", "prefer", "require", "verify-ca", "verify-full"}},
      path("sslrootcert",
           "File of the CA certificate(s) the server's certificate must chain to (verify-ca, "
           "verify-full); unset: ~/.postgresql/root.crt."),
      path("sslcert",
           "File of the client certificate, for a server that authenticates "
           "clients by certificate (pg_hba.conf cert or clientcert)."),
      path("sslkey",
           "File of the client certificate's private key; libpq refuses one that "
           "others can read (chmod 600)."),
  };
}

}  // namespace bizon
