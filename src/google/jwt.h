// RS256 JSON Web Tokens (RFC 7515/7519), signed with OpenSSL: the assertion a service-account
// key exchanges for an OAuth access token. Only this folder includes OpenSSL headers.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "bizon/status.h"
#include "bizon/value.h"

namespace bizon {

/// Base64url without padding (RFC 4648 §5), the JWT encoding of every segment.
std::string Base64UrlEncode(std::string_view bytes);

/// Standard or URL-safe base64 (RFC 4648 §4 and §5), padding optional, as proto3 JSON readers
/// accept it; nullopt for anything else (a stray character, data after padding, a dangling
/// sextet).
std::optional<std::string> Base64Decode(std::string_view text);

/// The RS256 signature (RSASSA-PKCS1-v1_5 with SHA-256) of `data` under `private_key_pem` (a
/// PKCS#8 "BEGIN PRIVATE KEY" or PKCS#1 "BEGIN RSA PRIVATE KEY" block), raw bytes. A key that
/// OpenSSL cannot read, or that is not RSA, is kInvalidArgument; the message never quotes the
/// key.
Result<std::string> SignRs256(std::string_view data, std::string_view private_key_pem);

/// "<header>.<claims>.<signature>", each base64url: `header` gains "alg": "RS256" and
/// "typ": "JWT" in front of its own fields (a "kid" for instance).
Result<std::string> MakeRs256Jwt(const Value& header, const Value& claims,
                                 std::string_view private_key_pem);

}  // namespace bizon
