#pragma once
// Object stores on the HTTP client: "s3://bucket/prefix" (AWS S3 and S3-compatible servers,
// signed with AWS Signature V4 or anonymous) and "gs://bucket/prefix" (Google Cloud Storage
// through its S3-compatible XML API at storage.googleapis.com, anonymous or with an OAuth
// bearer token). Reads are HttpStore's ranged GETs (coalesced, split, many in flight); list()
// is ListObjectsV2 with delimiter '/', following continuation tokens, so groups without
// consolidated metadata open.
//
// Errors name the bucket URL, the key and the HTTP status with S3's error code: a missing key
// (404 NoSuchKey) is "missing" (kMissing / nullopt), a missing bucket in a listing is
// kNotFound, 403 (AccessDenied, SignatureDoesNotMatch, InvalidAccessKeyId) is kPermissionDenied,
// 503 SlowDown and other 5xx are retried by the client and end as kUnavailable.

#include <optional>
#include <string>

#include "chute/store/aws_config.h"
#include "chute/store/http/http_store.h"
#include "chute/store/open_store.h"
#include "chute/util/option_table.h"

namespace chute {

/// The options of the object stores (s3:// and gs://), one table: what
/// chute.set_storage_options takes. An empty string (or an unset anonymous) is not given: the
/// environment decides (aws_config.h). They travel as StoreOpenOptions::settings.
struct StorageOptions {
  std::string endpoint_url;
  std::string region;
  std::string profile;
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;
  std::string token;
  std::optional<bool> anonymous;
  std::string addressing_style;

  /// Name, help and check of every field (option_table.h).
  static const std::vector<OptionField<StorageOptions>>& fields();
  /// The fields given, as settings ("anonymous" as "true"/"false").
  StoreOpenOptions settings() const;
  /// The inverse of settings(); throws kInvalidArgument naming an unknown key or a bad value.
  static StorageOptions from(const StoreOpenOptions& options);
};

/// Checks each field (fields()) and that `scheme` ("s3" or "gs") takes every option given:
/// token is for gs:// only; profile, access_key_id, secret_access_key, session_token, region
/// and addressing_style are for s3:// only.
void validate(const StorageOptions& options, std::string_view scheme);

class S3Store final : public HttpStore {
 public:
  /// `scheme`: "s3" or "gs" (for messages). `bearer_token` (GCS): sent as
  /// "Authorization: Bearer ..." instead of a SigV4 signature; config.credentials must then be
  /// empty.
  S3Store(std::string scheme, S3Location location, S3Config config, std::string bearer_token = "");

  std::vector<std::string> list(std::string_view prefix) const override;
  std::string describe() const override;

  const S3Config& config() const { return config_; }

 private:
  std::string scheme_;
  S3Location location_;
  S3Config config_;
};

/// Signs `request` with SigV4 for S3 at the current time (replacing a previous attempt's
/// signature headers). Exposed for tests.
void sign_s3_request(http::HttpRequest& request, const sigv4::Credentials& credentials,
                     const std::string& region);

/// The S3Options in `options.settings` ("endpoint_url", "region", "profile", "access_key_id",
/// "secret_access_key", "session_token", "anonymous", "addressing_style" = path|virtual).
/// Throws kInvalidArgument naming an unknown key or a bad value.
S3Options s3_options_from(const StoreOpenOptions& options);

/// Process-wide options for `scheme` ("s3" or "gs"), used by every store of that scheme
/// (what chute.set_storage_options sets); options given to open_store win over them.
/// Validated here: kInvalidArgument naming an unknown key or bad value.
void set_object_store_options(const std::string& scheme, const StoreOpenOptions& options);
StoreOpenOptions object_store_options(const std::string& scheme);

/// open_store's factories for "s3://" and "gs://".
StorePtr open_s3_store(std::string_view location, const StoreOpenOptions& options);
StorePtr open_gcs_store(std::string_view location, const StoreOpenOptions& options);

}  // namespace chute
