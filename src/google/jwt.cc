#include "google/jwt.h"

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <memory>

#include "http/authenticator.h"

namespace bizon {
namespace {

struct BioFree {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
struct KeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
struct MdContextFree {
  void operator()(EVP_MD_CTX* context) const { EVP_MD_CTX_free(context); }
};

// OpenSSL's reason for the last failure ("unsupported", "bad decrypt"...): names, never data.
std::string LastOpenSslError() {
  unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return "unknown error";
  const char* reason = ERR_reason_error_string(code);
  return reason != nullptr ? reason : "error " + std::to_string(code);
}

}  // namespace

std::string Base64UrlEncode(std::string_view bytes) {
  std::string out = Base64Encode(bytes);
  while (!out.empty() && out.back() == '=') out.pop_back();
  for (char& c : out) {
    if (c == '+') c = '-';
    if (c == '/') c = '_';
  }
  return out;
}

Result<std::string> SignRs256(std::string_view data, std::string_view private_key_pem) {
  std::unique_ptr<BIO, BioFree> bio(
      BIO_new_mem_buf(private_key_pem.data(), static_cast<int>(private_key_pem.size())));
  if (bio == nullptr) return Fail(InternalError("OpenSSL could not allocate a memory BIO"));
  std::unique_ptr<EVP_PKEY, KeyFree> key(
      PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  if (key == nullptr) {
    return Fail(InvalidArgumentError(
        "the private key is not a PEM private key (OpenSSL: " + LastOpenSslError() + ")"));
  }
  if (EVP_PKEY_base_id(key.get()) != EVP_PKEY_RSA) {
    return Fail(InvalidArgumentError("the private key is not an RSA key, which RS256 needs"));
  }
  std::unique_ptr<EVP_MD_CTX, MdContextFree> context(EVP_MD_CTX_new());
  size_t length = 0;
  if (context == nullptr ||
      EVP_DigestSignInit(context.get(), nullptr, EVP_sha256(), nullptr, key.get()) != 1 ||
      EVP_DigestSign(context.get(), nullptr, &length,
                     reinterpret_cast<const unsigned char*>(data.data()), data.size()) != 1) {
    return Fail(
        InvalidArgumentError("the private key cannot sign (OpenSSL: " + LastOpenSslError() + ")"));
  }
  std::string signature(length, '\0');
  if (EVP_DigestSign(context.get(), reinterpret_cast<unsigned char*>(signature.data()), &length,
                     reinterpret_cast<const unsigned char*>(data.data()), data.size()) != 1) {
    return Fail(
        InvalidArgumentError("the private key cannot sign (OpenSSL: " + LastOpenSslError() + ")"));
  }
  signature.resize(length);
  return signature;
}

Result<std::string> MakeRs256Jwt(const Value& header, const Value& claims,
                                 std::string_view private_key_pem) {
  Value full_header(Value::Map{{"alg", Value("RS256")}, {"typ", Value("JWT")}});
  if (header.is_map()) {
    for (const auto& [name, value] : header.AsMap()) full_header.Set(name, value);
  }
  std::string signing_input =
      Base64UrlEncode(full_header.ToJson()) + "." + Base64UrlEncode(claims.ToJson());
  BIZON_ASSIGN_OR_RETURN(std::string signature, SignRs256(signing_input, private_key_pem));
  return signing_input + "." + Base64UrlEncode(signature);
}

std::optional<std::string> Base64Decode(std::string_view text) {
  std::string out;
  out.reserve(text.size() / 4 * 3);
  uint32_t buffer = 0;
  int bits = 0;
  size_t padding = 0;
  for (char c : text) {
    int value;
    if (c >= 'A' && c <= 'Z') {
      value = c - 'A';
    } else if (c >= 'a' && c <= 'z') {
      value = c - 'a' + 26;
    } else if (c >= '0' && c <= '9') {
      value = c - '0' + 52;
    } else if (c == '+' || c == '-') {
      value = 62;
    } else if (c == '/' || c == '_') {
      value = 63;
    } else if (c == '=') {
      ++padding;
      continue;
    } else {
      return std::nullopt;
    }
    if (padding > 0) return std::nullopt;  // Data after padding.
    buffer = (buffer << 6) | static_cast<uint32_t>(value);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((buffer >> bits) & 0xFF));
    }
  }
  if (bits >= 6 || padding > 2) return std::nullopt;  // A dangling sextet is not base64.
  return out;
}

}  // namespace bizon
