#include "http/aws_sigv4.h"

#include <gtest/gtest.h>

namespace bizon {
namespace {

std::string HeaderOf(const HttpRequest& request, std::string_view name) {
  for (const auto& [key, value] : request.headers) {
    if (key == name) return value;
  }
  return "";
}

const AwsCredentials kExampleKeys{.access_key_id = "AKIAIOSFODNN7EXAMPLE",
                                  .secret_access_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"};

// The worked examples of Amazon's S3 SigV4 documentation ("Examples: Signature Calculations in
// AWS Signature Version 4"): their published signatures.
TEST(AwsSigV4Test, MatchesTheDocumentedGetObjectExample) {
  HttpRequest request{.method = "GET", .url = "https://examplebucket.s3.amazonaws.com/test.txt"};
  request.headers.emplace_back("Range", "bytes=0-9");
  ASSERT_TRUE(SignAwsV4(request, kExampleKeys, "us-east-1", "s3", "20130524T000000Z").ok());
  EXPECT_EQ(HeaderOf(request, "x-amz-content-sha256"),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(HeaderOf(request, "Authorization"),
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
            "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
            "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

TEST(AwsSigV4Test, MatchesTheDocumentedListObjectsExample) {
  HttpRequest request{.method = "GET",
                      .url = "https://examplebucket.s3.amazonaws.com/?max-keys=2&prefix=J"};
  ASSERT_TRUE(SignAwsV4(request, kExampleKeys, "us-east-1", "s3", "20130524T000000Z").ok());
  EXPECT_EQ(HeaderOf(request, "Authorization"),
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
            "SignedHeaders=host;x-amz-content-sha256;x-amz-date, "
            "Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
}

TEST(AwsSigV4Test, HashesThePayloadAndSignsAgainWithoutDuplicates) {
  HttpRequest request{.method = "PUT",
                      .url = "http://127.0.0.1:9000/bucket/a%20b.json",
                      .body = "Welcome to Amazon S3."};
  AwsCredentials credentials = kExampleKeys;
  credentials.session_token = "token";
  ASSERT_TRUE(SignAwsV4(request, credentials, "us-east-1", "s3", "20130524T000000Z").ok());
  ASSERT_TRUE(SignAwsV4(request, credentials, "us-east-1", "s3", "20130524T000000Z").ok());
  EXPECT_EQ(HeaderOf(request, "x-amz-content-sha256"),
            "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072");
  EXPECT_EQ(HeaderOf(request, "x-amz-security-token"), "token");
  int authorizations = 0;
  for (const auto& header : request.headers) authorizations += header.first == "Authorization";
  EXPECT_EQ(authorizations, 1);
  EXPECT_NE(HeaderOf(request, "Authorization").find("x-amz-security-token"), std::string::npos);
}

}  // namespace
}  // namespace bizon
