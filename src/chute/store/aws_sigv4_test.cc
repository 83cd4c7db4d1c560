// AWS Signature V4 checked against AWS's published examples: the SigV4 test suite's
// get-vanilla and get-vanilla-query-order-key-case, the signing-key derivation example of the
// IAM guide, and the S3 API reference's "GET Object" and "ListObjects" examples. The session
// token case (which has no published vector with these headers) was checked against botocore's
// S3SigV4Auth.

#include "chute/store/aws_sigv4.h"

#include <gtest/gtest.h>

namespace chute::sigv4 {
namespace {

const Credentials kSuiteCredentials{"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", ""};
const Credentials kS3DocCredentials{"AKIAIOSFODNN7EXAMPLE",
                                    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", ""};

std::string find(const std::vector<Header>& headers, std::string_view name) {
  for (const auto& [key, value] : headers) {
    if (key == name) return value;
  }
  return "<absent>";
}

TEST(SigV4, Sha256OfEmptyAndOfText) {
  EXPECT_EQ(sha256_hex(""), kEmptyPayloadHash);
  EXPECT_EQ(sha256_hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");  // FIPS 180-2
}

TEST(SigV4, HmacSha256Rfc4231Case2) {
  EXPECT_EQ(hex(hmac_sha256("Jefe", "what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST(SigV4, UriEncode) {
  EXPECT_EQ(uri_encode("a b/c+d~e_f.g-h", false), "a%20b/c%2Bd~e_f.g-h");
  EXPECT_EQ(uri_encode("a/b=c", true), "a%2Fb%3Dc");
  EXPECT_EQ(uri_encode("\xc3\xa9", true), "%C3%A9");
}

TEST(SigV4, SigningKeyFromIamGuide) {
  EXPECT_EQ(
      hex(signing_key("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "20150830", "us-east-1", "iam")),
      "c4afb1cc5771d871763a393e44b703571b55cc28424d1a5e86da6ed3c154a4b9");
}

TEST(SigV4, GetVanillaFromTheTestSuite) {
  Request request;
  request.headers = {{"Host", "example.amazonaws.com"}, {"X-Amz-Date", "20150830T123600Z"}};
  EXPECT_EQ(canonical_request(request),
            "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\n"
            "host;x-amz-date\n"
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(string_to_sign("20150830T123600Z", credential_scope("20150830", "us-east-1", "service"),
                           canonical_request(request)),
            "AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/us-east-1/service/aws4_request\n"
            "bb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63");
  EXPECT_EQ(authorization(request, kSuiteCredentials, "us-east-1", "service", "20150830T123600Z"),
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
            "SignedHeaders=host;x-amz-date, "
            "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
  // sign() adds x-amz-date itself (and no x-amz-content-sha256 outside S3).
  Request bare;
  bare.headers = {{"Host", "example.amazonaws.com"}};
  const auto added = sign(bare, kSuiteCredentials, "us-east-1", "service", "20150830T123600Z");
  EXPECT_EQ(find(added, "x-amz-date"), "20150830T123600Z");
  EXPECT_EQ(find(added, "x-amz-content-sha256"), "<absent>");
  EXPECT_EQ(find(added, "Authorization"),
            authorization(request, kSuiteCredentials, "us-east-1", "service", "20150830T123600Z"));
}

TEST(SigV4, GetVanillaQueryOrderKeyCase) {
  Request request;
  request.query = {{"Param2", "value2"}, {"Param1", "value1"}};
  request.headers = {{"Host", "example.amazonaws.com"}};
  const auto added = sign(request, kSuiteCredentials, "us-east-1", "service", "20150830T123600Z");
  EXPECT_EQ(canonical_query(request.query), "Param1=value1&Param2=value2");
  EXPECT_EQ(find(added, "Authorization"),
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
            "SignedHeaders=host;x-amz-date, "
            "Signature=b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500");
}

TEST(SigV4, S3GetObjectExample) {
  Request request;
  request.canonical_uri = "/test.txt";
  request.headers = {{"Host", "examplebucket.s3.amazonaws.com"}, {"Range", "bytes=0-9"}};
  const auto added = sign(request, kS3DocCredentials, "us-east-1", "s3", "20130524T000000Z");
  EXPECT_EQ(find(added, "x-amz-content-sha256"), kEmptyPayloadHash);
  EXPECT_EQ(find(added, "Authorization"),
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/"
            "aws4_request, SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
            "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
  request.headers.insert(request.headers.end(), added.begin(), added.end() - 1);
  EXPECT_EQ(sha256_hex(canonical_request(request)),
            "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972");
}

TEST(SigV4, S3ListObjectsExample) {
  Request request;
  request.query = {{"max-keys", "2"}, {"prefix", "J"}};
  request.headers = {{"Host", "examplebucket.s3.amazonaws.com"}};
  const auto added = sign(request, kS3DocCredentials, "us-east-1", "s3", "20130524T000000Z");
  EXPECT_EQ(find(added, "Authorization"),
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/"
            "aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date, "
            "Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
}

TEST(SigV4, SessionTokenEncodedKeyAndQueryAgreeWithBotocore) {
  Request request;
  request.canonical_uri = "/bucket/" + uri_encode("a b/c+d.txt", false);
  request.query = {{"list-type", "2"}, {"prefix", "a/b"}, {"continuation-token", "1+2="}};
  request.headers = {{"host", "127.0.0.1:9000"}, {"range", "bytes=-100"}};
  Credentials credentials = kS3DocCredentials;
  credentials.session_token = "FQoGZXIvYXdzEXAMPLE//token+/=";
  const auto added = sign(request, credentials, "eu-west-2", "s3", "20261124T152001Z");
  EXPECT_EQ(canonical_query(request.query), "continuation-token=1%2B2%3D&list-type=2&prefix=a%2Fb");
  EXPECT_EQ(find(added, "x-amz-security-token"), credentials.session_token);
  EXPECT_EQ(find(added, "Authorization"),
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20261124/eu-west-2/s3/"
            "aws4_request, SignedHeaders=host;range;x-amz-content-sha256;x-amz-date;"
            "x-amz-security-token, "
            "Signature=5b971e198651088e9d8ce21d6116c1b7036b07060bece0778a20ce8e5e2a363c");
  // A wrong secret or a changed header gives another signature.
  credentials.secret_access_key += "x";
  EXPECT_NE(
      find(sign(request, credentials, "eu-west-2", "s3", "20261124T152001Z"), "Authorization"),
      find(added, "Authorization"));
}

TEST(SigV4, HeaderValuesTrimmedAndRepeatedHeadersJoined) {
  const auto headers =
      canonical_headers({{"My-Header1", "  a   b   c  "}, {"X-B", "1"}, {"x-b", "2"}});
  ASSERT_EQ(headers.size(), 2u);
  EXPECT_EQ(headers[0], Header("my-header1", "a b c"));
  EXPECT_EQ(headers[1], Header("x-b", "1,2"));
}

TEST(SigV4, AmzDate) {
  EXPECT_EQ(amz_date(1440938160), "20150830T123600Z");
  EXPECT_EQ(amz_date(0), "19700101T000000Z");
}

}  // namespace
}  // namespace chute::sigv4
