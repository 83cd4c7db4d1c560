// The S3/GCS store's pieces that need no server: options, URLs, per-attempt signing. Reads,
// listings and errors against a real S3 server are in python/tests/test_object_stores.py (moto).

#include "chute/store/s3_store.h"

#include <gtest/gtest.h>

#include "chute/util/error.h"

namespace chute {
namespace {

std::string header(const http::HttpRequest& request, std::string_view name) {
  const auto value = http::find_header(request.headers, name);
  return value ? std::string(*value) : "<absent>";
}

TEST(S3Store, SigningReplacesThePreviousAttemptsHeaders) {
  http::HttpRequest request;
  request.url = "http://127.0.0.1:9000/bucket/a%20b/c?list-type=2&prefix=a%2F";
  request.headers = {{"Range", "bytes=0-9"}};
  const sigv4::Credentials credentials{"AK", "SK", "TOKEN"};
  sign_s3_request(request, credentials, "us-east-1");
  sign_s3_request(request, credentials, "us-east-1");  // a retry signs again
  size_t authorizations = 0;
  for (const auto& [name, value] : request.headers) authorizations += name == "Authorization";
  EXPECT_EQ(authorizations, 1u);
  EXPECT_EQ(header(request, "host"), "127.0.0.1:9000");
  EXPECT_EQ(header(request, "x-amz-security-token"), "TOKEN");
  EXPECT_EQ(header(request, "x-amz-content-sha256"), sigv4::kEmptyPayloadHash);
  const std::string authorization = header(request, "authorization");
  EXPECT_NE(authorization.find("Credential=AK/"), std::string::npos) << authorization;
  EXPECT_NE(authorization.find("/us-east-1/s3/aws4_request"), std::string::npos);
  EXPECT_NE(authorization.find(
                "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date;x-amz-security-token"),
            std::string::npos)
      << authorization;

  // The signature is the one sigv4::authorization() computes for the same request.
  sigv4::Request same;
  same.canonical_uri = "/bucket/a%20b/c";
  same.query = {{"list-type", "2"}, {"prefix", "a/"}};
  for (const auto& [name, value] : request.headers) {
    if (name != "Authorization") same.headers.emplace_back(name, value);
  }
  EXPECT_EQ(authorization, sigv4::authorization(same, credentials, "us-east-1", "s3",
                                                header(request, "x-amz-date")));
}

TEST(S3Store, OptionsAreValidated) {
  StoreOpenOptions options;
  options.settings = {{"endpoint_url", "http://127.0.0.1:1"},
                      {"anonymous", "true"},
                      {"addressing_style", "virtual"},
                      {"region", "eu-west-1"}};
  const S3Options s3 = s3_options_from(options);
  EXPECT_EQ(s3.endpoint_url, "http://127.0.0.1:1");
  EXPECT_EQ(s3.anonymous, true);
  EXPECT_EQ(s3.path_style, false);
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"anonymous", "perhaps"}, {"addressing_style", "dns"}, {"endpoint", "x"}}) {
    StoreOpenOptions bad;
    bad.settings = {{key, value}};
    try {
      s3_options_from(bad);
      ADD_FAILURE() << key;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  }
  StoreOpenOptions token;
  token.settings = {{"token", "abc"}};
  EXPECT_THROW(open_s3_store("s3://bucket/x", token), Error);
  StoreOpenOptions profile;
  profile.settings = {{"profile", "dev"}};
  EXPECT_THROW(open_gcs_store("gs://bucket/x", profile), Error);
}

TEST(S3Store, UrlsAndDescription) {
  StoreOpenOptions options;
  options.settings = {{"endpoint_url", "http://127.0.0.1:1/"}, {"anonymous", "true"}};
  const StorePtr store = open_store("s3://my-bucket/data/x.zarr/", options);
  EXPECT_EQ(store->describe(), "s3://my-bucket/data/x.zarr");
  const auto& s3 = dynamic_cast<const S3Store&>(*store);
  EXPECT_EQ(s3.key_url("c/0 1"), "http://127.0.0.1:1/my-bucket/data/x.zarr/c/0%201");
  options.settings = {{"endpoint_url", "http://127.0.0.1:2"}};
  const StorePtr gcs = open_store("gs://pub-bucket/era5", options);
  EXPECT_EQ(gcs->describe(), "gs://pub-bucket/era5");
  EXPECT_EQ(dynamic_cast<const S3Store&>(*gcs).key_url("zarr.json"),
            "http://127.0.0.1:2/pub-bucket/era5/zarr.json");
}

}  // namespace
}  // namespace chute
