#include "chute/store/aws_config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "chute/util/error.h"

namespace chute {
namespace {

Environment fake(std::map<std::string, std::string, std::less<>> values) {
  return [values = std::move(values)](std::string_view name) -> std::optional<std::string> {
    const auto found = values.find(name);
    if (found == values.end()) return std::nullopt;
    return found->second;
  };
}

class AwsConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    home_ = std::filesystem::temp_directory_path() /
            ("chute_aws_config_" + std::to_string(getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(home_ / ".aws");
  }
  void TearDown() override { std::filesystem::remove_all(home_); }
  void write(const std::string& name, const std::string& text) {
    std::ofstream(home_ / ".aws" / name) << text;
  }
  std::string home() const { return home_.string(); }
  std::filesystem::path home_;
};

TEST(Ini, SectionsKeysCommentsAndNestedBlocks) {
  const IniSections ini = parse_ini(
      "# comment\n[default]\naws_access_key_id = AKID\r\nAWS_Secret_Access_Key=secret = x\n"
      "; another\n\n[profile dev]\nregion=eu-west-1\ns3 =\n  endpoint_url = http://h:1\n"
      "  addressing_style = path\n",
      "cfg");
  EXPECT_EQ(ini.at("default").at("aws_access_key_id"), "AKID");
  EXPECT_EQ(ini.at("default").at("aws_secret_access_key"), "secret = x");
  EXPECT_EQ(ini.at("profile dev").at("region"), "eu-west-1");
  EXPECT_EQ(ini.at("profile dev").at("s3.endpoint_url"), "http://h:1");
  EXPECT_EQ(ini.at("profile dev").at("s3.addressing_style"), "path");
}

TEST(Ini, BadLinesNameFileAndLine) {
  for (const char* text :
       {"key = value\n", "[default]\njust words\n", "[default\n", "[x]\n= v\n"}) {
    try {
      parse_ini(text, "/home/u/.aws/credentials");
      ADD_FAILURE() << text;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("/home/u/.aws/credentials line "), std::string::npos)
          << e.what();
    }
  }
}

TEST(BucketUrl, SplitsBucketAndPrefix) {
  const S3Location a = parse_bucket_url("s3://my-bucket/data/era5.zarr/", "s3");
  EXPECT_EQ(a.bucket, "my-bucket");
  EXPECT_EQ(a.prefix, "data/era5.zarr");
  EXPECT_EQ(parse_bucket_url("gs://bkt", "gs").prefix, "");
  EXPECT_THROW(parse_bucket_url("s3://", "s3"), Error);
  EXPECT_THROW(parse_bucket_url("s3://Upper/x", "s3"), Error);
  EXPECT_THROW(parse_bucket_url("gs://bucket/x", "s3"), Error);
}

TEST_F(AwsConfigTest, EnvironmentCredentialsRegionAndEndpoint) {
  const S3Config config = resolve_s3_config("bkt", {},
                                            fake({{"HOME", home()},
                                                  {"AWS_ACCESS_KEY_ID", "AK"},
                                                  {"AWS_SECRET_ACCESS_KEY", "SK"},
                                                  {"AWS_SESSION_TOKEN", "TOK"},
                                                  {"AWS_DEFAULT_REGION", "eu-north-1"},
                                                  {"AWS_ENDPOINT_URL", "http://ignored:1"},
                                                  {"AWS_ENDPOINT_URL_S3", "http://127.0.0.1:9/"}}));
  ASSERT_TRUE(config.credentials.has_value());
  EXPECT_EQ(config.credentials->access_key_id, "AK");
  EXPECT_EQ(config.credentials->secret_access_key, "SK");
  EXPECT_EQ(config.credentials->session_token, "TOK");
  EXPECT_EQ(config.region, "eu-north-1");
  EXPECT_EQ(config.endpoint, "http://127.0.0.1:9");
  EXPECT_TRUE(config.path_style);
  EXPECT_EQ(config.object_url("bkt", "a b/c.zarr/.zarray"),
            "http://127.0.0.1:9/bkt/a%20b/c.zarr/.zarray");
}

TEST_F(AwsConfigTest, AwsDefaultsToVirtualHosted) {
  const S3Config config =
      resolve_s3_config("bkt", {}, fake({{"HOME", home()}, {"AWS_REGION", "us-west-2"}}));
  EXPECT_EQ(config.endpoint, "https://s3.us-west-2.amazonaws.com");
  EXPECT_FALSE(config.path_style);
  EXPECT_EQ(config.object_url("bkt", "k/0"), "https://bkt.s3.us-west-2.amazonaws.com/k/0");
  EXPECT_FALSE(config.credentials.has_value());  // nothing found: anonymous
  EXPECT_EQ(config.credentials_source, "anonymous (no credentials found)");
  EXPECT_TRUE(resolve_s3_config("a.b.c", {}, fake({{"HOME", home()}})).path_style);
}

TEST_F(AwsConfigTest, ProfilesFromCredentialsAndConfigFiles) {
  write("credentials",
        "[default]\naws_access_key_id=DEF\naws_secret_access_key=DEFSECRET\n"
        "[dev]\naws_access_key_id=DEV\naws_secret_access_key=DEVSECRET\naws_session_token=T\n");
  write("config",
        "[default]\nregion=ap-south-1\n[profile dev]\nregion=eu-west-3\n"
        "endpoint_url=http://127.0.0.1:7\n[profile only-config]\n"
        "aws_access_key_id=OC\naws_secret_access_key=OCSECRET\n");
  S3Config config = resolve_s3_config("bkt", {}, fake({{"HOME", home()}}));
  EXPECT_EQ(config.credentials->access_key_id, "DEF");
  EXPECT_EQ(config.region, "ap-south-1");
  EXPECT_EQ(config.credentials_source, "profile 'default'");

  config = resolve_s3_config("bkt", {}, fake({{"HOME", home()}, {"AWS_PROFILE", "dev"}}));
  EXPECT_EQ(config.credentials->access_key_id, "DEV");
  EXPECT_EQ(config.credentials->session_token, "T");
  EXPECT_EQ(config.region, "eu-west-3");
  EXPECT_EQ(config.endpoint, "http://127.0.0.1:7");

  S3Options options;
  options.profile = "only-config";
  config = resolve_s3_config("bkt", options, fake({{"HOME", home()}, {"AWS_PROFILE", "dev"}}));
  EXPECT_EQ(config.credentials->access_key_id, "OC");

  // Environment credentials win over the profile; options win over both.
  config = resolve_s3_config(
      "bkt", {},
      fake({{"HOME", home()}, {"AWS_ACCESS_KEY_ID", "E"}, {"AWS_SECRET_ACCESS_KEY", "ES"}}));
  EXPECT_EQ(config.credentials->access_key_id, "E");
  options = {};
  options.access_key_id = "O";
  options.secret_access_key = "OS";
  options.region = "sa-east-1";
  config = resolve_s3_config(
      "bkt", options,
      fake({{"HOME", home()}, {"AWS_ACCESS_KEY_ID", "E"}, {"AWS_SECRET_ACCESS_KEY", "ES"}}));
  EXPECT_EQ(config.credentials->access_key_id, "O");
  EXPECT_EQ(config.region, "sa-east-1");
  EXPECT_EQ(config.credentials_source, "options");
}

TEST_F(AwsConfigTest, FilesNamedByEnvironmentAndMissingProfile) {
  write("other", "[default]\naws_access_key_id=F\naws_secret_access_key=FS\n");
  const S3Config config =
      resolve_s3_config("bkt", {}, fake({{"AWS_SHARED_CREDENTIALS_FILE", home() + "/.aws/other"}}));
  EXPECT_EQ(config.credentials->access_key_id, "F");
  try {
    resolve_s3_config("bkt", {}, fake({{"HOME", home()}, {"AWS_PROFILE", "nope"}}));
    ADD_FAILURE() << "a missing profile must fail";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("'nope'"), std::string::npos) << e.what();
  }
}

TEST_F(AwsConfigTest, AnonymousOnRequest) {
  const auto env = fake({{"HOME", home()},
                         {"AWS_ACCESS_KEY_ID", "E"},
                         {"AWS_SECRET_ACCESS_KEY", "ES"},
                         {"AWS_NO_SIGN_REQUEST", "true"}});
  EXPECT_FALSE(resolve_s3_config("bkt", {}, env).credentials.has_value());
  S3Options options;
  options.anonymous = false;
  EXPECT_TRUE(resolve_s3_config("bkt", options, env).credentials.has_value());
  options.anonymous = true;
  EXPECT_FALSE(
      resolve_s3_config("bkt", options,
                        fake({{"AWS_ACCESS_KEY_ID", "E"}, {"AWS_SECRET_ACCESS_KEY", "ES"}}))
          .credentials.has_value());
}

TEST_F(AwsConfigTest, BadOptionsAreInvalidArgument) {
  S3Options options;
  options.endpoint_url = "127.0.0.1:9000";
  EXPECT_THROW(resolve_s3_config("bkt", options, fake({})), Error);
  options = {};
  options.access_key_id = "only-half";
  EXPECT_THROW(resolve_s3_config("bkt", options, fake({})), Error);
}

}  // namespace
}  // namespace chute
