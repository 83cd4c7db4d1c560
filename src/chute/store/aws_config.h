#pragma once
// Where an S3 store's endpoint, region and credentials come from, resolved the way the AWS CLI
// and botocore do (the first source that has a value wins):
//   credentials: options (access_key_id + secret_access_key [+ session_token])
//                > AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY [+ AWS_SESSION_TOKEN]
//                > the profile (options.profile > AWS_PROFILE > "default") in
//                  AWS_SHARED_CREDENTIALS_FILE (~/.aws/credentials), then in
//                  AWS_CONFIG_FILE (~/.aws/config, section "profile NAME" or "default")
//                > none: anonymous (unsigned) requests.
//   anonymous:   options.anonymous = true or AWS_NO_SIGN_REQUEST=true skips all of the above.
//   region:      options > AWS_REGION > AWS_DEFAULT_REGION > the profile's `region` > us-east-1.
//   endpoint:    options.endpoint_url > AWS_ENDPOINT_URL_S3 > AWS_ENDPOINT_URL > the profile's
//                `endpoint_url` > AWS (https://BUCKET.s3.REGION.amazonaws.com, virtual-hosted).
// A custom endpoint is addressed path-style (ENDPOINT/BUCKET/KEY), as MinIO, moto and Ceph
// expect; AWS is addressed virtual-hosted unless the bucket name has a '.' (TLS would fail).
// The environment is passed in (a lookup function), so all of this is testable.

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "chute/store/aws_sigv4.h"

namespace chute {

/// Sections of an INI file (AWS's credentials/config format): "[name]" headers, "key = value"
/// lines, '#' or ';' comments, blank lines; a line that starts with blanks continues the
/// previous key's value (AWS's nested "s3 =" blocks), kept as its own "parent.key" entry.
/// Keys are lower-cased. Throws chute::Error (kInvalidArgument) naming `where` and the line
/// on a line it cannot read.
using IniSections = std::map<std::string, std::map<std::string, std::string>, std::less<>>;
IniSections parse_ini(std::string_view text, std::string_view where);

/// Looks up an environment variable (nullopt when unset).
using Environment = std::function<std::optional<std::string>(std::string_view)>;
Environment process_environment();

struct S3Options {
  std::optional<std::string> endpoint_url;
  std::optional<std::string> region;
  std::optional<std::string> profile;
  std::optional<std::string> access_key_id;
  std::optional<std::string> secret_access_key;
  std::optional<std::string> session_token;
  std::optional<bool> anonymous;
  /// Address the bucket as ENDPOINT/BUCKET (true) or BUCKET.ENDPOINT (false); default as above.
  std::optional<bool> path_style;
};

struct S3Location {
  std::string bucket;
  std::string prefix;  // without leading or trailing '/'
};

/// Splits "s3://bucket/some/prefix" (or "gs://..."); throws kInvalidArgument for a URL with no
/// bucket, a bucket name S3 would refuse, or a scheme other than `scheme`.
S3Location parse_bucket_url(std::string_view url, std::string_view scheme);

struct S3Config {
  std::string endpoint;  // "https://s3.us-east-1.amazonaws.com", "http://127.0.0.1:5000"
  std::string region;
  bool path_style = false;
  std::optional<sigv4::Credentials> credentials;  // nullopt: anonymous
  std::string credentials_source;                 // for messages: "environment", ...

  /// The URL of an object (or of the bucket, for key ""), its key percent-encoded.
  std::string object_url(std::string_view bucket, std::string_view key) const;
};

S3Config resolve_s3_config(std::string_view bucket, const S3Options& options,
                           const Environment& environment);

}  // namespace chute
