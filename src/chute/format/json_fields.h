#pragma once
// Reading fields of a JSON metadata document with errors that name the node, the document and the
// field: "array 'x/temp': .zarray field 'chunks' must be a list of integers, found "abc"".

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace chute {

/// Parses `text` as JSON; throws kInvalidMetadata "<context> is not valid JSON: ..." otherwise.
nlohmann::json parse_json_document(std::string_view text, const std::string& context);

/// A short printable form of a JSON value for messages (truncated).
std::string describe_json(const nlohmann::json& value);

class FieldReader {
 public:
  /// `context` names the document ("array 'x': .zarray"); `path` prefixes field names for nested
  /// objects ("chunk_grid.configuration."). Throws kInvalidMetadata unless `object` is an object.
  FieldReader(const nlohmann::json& object, std::string context, std::string path = {});

  /// "array 'x': .zarray field 'chunks'".
  std::string where(std::string_view field) const;
  [[noreturn]] void invalid(std::string_view field, const std::string& problem) const;

  const nlohmann::json& object() const { return object_; }
  /// The field, or nullptr when absent.
  const nlohmann::json* find(std::string_view field) const;
  /// The field; kInvalidMetadata "... is missing" when absent.
  const nlohmann::json& require(std::string_view field) const;

  std::string require_string(std::string_view field) const;
  int64_t require_integer(std::string_view field) const;
  /// A list of integers, each >= min_value.
  std::vector<int64_t> require_int_list(std::string_view field, int64_t min_value) const;
  /// A reader for a nested object field.
  FieldReader nested(std::string_view field) const;

 private:
  const nlohmann::json& object_;
  std::string context_;
  std::string path_;
};

}  // namespace chute
