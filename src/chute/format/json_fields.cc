#include "chute/format/json_fields.h"

#include "chute/util/error.h"
#include "chute/util/json_limits.h"

namespace chute {

using nlohmann::json;

json parse_json_document(std::string_view text, const std::string& context) {
  check_json_limits(text, context);
  try {
    return json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    fail(ErrorCode::kInvalidMetadata, "{} is not valid JSON: {}", context, e.what());
  }
}

std::string describe_json(const json& value) {
  std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
}

FieldReader::FieldReader(const json& object, std::string context, std::string path)
    : object_(object), context_(std::move(context)), path_(std::move(path)) {
  if (!object_.is_object()) {
    if (path_.empty()) {
      fail(ErrorCode::kInvalidMetadata, "{} must be a JSON object, found {}", context_,
           describe_json(object_));
    }
    std::string field = path_.substr(0, path_.size() - 1);  // drop the trailing '.'
    fail(ErrorCode::kInvalidMetadata, "{} field '{}' must be an object, found {}", context_, field,
         describe_json(object_));
  }
}

std::string FieldReader::where(std::string_view field) const {
  return fmt::format("{} field '{}{}'", context_, path_, field);
}

void FieldReader::invalid(std::string_view field, const std::string& problem) const {
  fail(ErrorCode::kInvalidMetadata, "{} {}", where(field), problem);
}

const json* FieldReader::find(std::string_view field) const {
  auto it = object_.find(field);
  return it == object_.end() ? nullptr : &*it;
}

const json& FieldReader::require(std::string_view field) const {
  const json* value = find(field);
  if (value == nullptr) invalid(field, "is missing");
  return *value;
}

std::string FieldReader::require_string(std::string_view field) const {
  const json& value = require(field);
  if (!value.is_string()) invalid(field, "must be a string, found " + describe_json(value));
  return value.get<std::string>();
}

int64_t FieldReader::require_integer(std::string_view field) const {
  const json& value = require(field);
  if (value.is_number_unsigned()) {
    if (value.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
      invalid(field, "is too large: " + describe_json(value));
    }
    return static_cast<int64_t>(value.get<uint64_t>());
  }
  if (!value.is_number_integer()) {
    invalid(field, "must be an integer, found " + describe_json(value));
  }
  return value.get<int64_t>();
}

std::vector<int64_t> FieldReader::require_int_list(std::string_view field,
                                                   int64_t min_value) const {
  const json& value = require(field);
  if (!value.is_array()) {
    invalid(field, "must be a list of integers, found " + describe_json(value));
  }
  std::vector<int64_t> out;
  out.reserve(value.size());
  for (const json& item : value) {
    bool ok = item.is_number_integer();
    if (ok && item.is_number_unsigned()) ok = item.get<uint64_t>() <= uint64_t{INT64_MAX};
    if (!ok) invalid(field, "must be a list of integers, found " + describe_json(value));
    const int64_t v = item.get<int64_t>();
    if (v < min_value) {
      invalid(field, fmt::format("must hold integers >= {}, found {}", min_value, v));
    }
    out.push_back(v);
  }
  return out;
}

FieldReader FieldReader::nested(std::string_view field) const {
  return FieldReader(require(field), context_, fmt::format("{}{}.", path_, field));
}

}  // namespace chute
