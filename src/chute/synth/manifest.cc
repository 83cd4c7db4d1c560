#include "chute/synth/manifest.h"

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "chute/synth/zarr_writer.h"
#include "chute/util/error.h"

namespace chute::synth {
using nlohmann::json;

json Manifest::to_json() const {
  return {{"workload", workload},
          {"zarr_format", zarr_format},
          {"created_by", created_by},
          {"chute_version", "0.1.0"},
          {"arrays", arrays},
          {"options", options},
          {"stats", {{"logical_bytes", logical_bytes}, {"stored_bytes", stored_bytes}}}};
}

Manifest Manifest::from_json(const json& document) {
  auto field = [&](const char* name, json::value_t type, const char* expected) -> const json& {
    if (!document.is_object() || !document.contains(name)) {
      fail(ErrorCode::kInvalidMetadata, "chute.json: expected field '{}', found none", name);
    }
    const json& value = document.at(name);
    bool ok = value.type() == type ||
              (type == json::value_t::number_integer && value.is_number_integer());
    if (!ok) {
      fail(ErrorCode::kInvalidMetadata, "chute.json: expected '{}' to be {}, found {}", name,
           expected, value.dump());
    }
    return value;
  };
  Manifest m;
  m.workload = field("workload", json::value_t::string, "a string").get<std::string>();
  m.zarr_format = field("zarr_format", json::value_t::number_integer, "an integer").get<int>();
  for (const auto& [name, path] : field("arrays", json::value_t::object, "an object").items()) {
    if (!path.is_string()) {
      fail(ErrorCode::kInvalidMetadata, "chute.json: expected arrays.{} to be a path, found {}",
           name, path.dump());
    }
    m.arrays[name] = path.get<std::string>();
  }
  if (document.contains("created_by") && document["created_by"].is_string()) {
    m.created_by = document["created_by"].get<std::string>();
  }
  if (document.contains("options") && document["options"].is_object()) {
    m.options = document["options"];
  }
  if (document.contains("stats") && document["stats"].is_object()) {
    m.logical_bytes = document["stats"].value("logical_bytes", int64_t{0});
    m.stored_bytes = document["stats"].value("stored_bytes", int64_t{0});
  }
  return m;
}

void write_manifest(const std::string& folder, const Manifest& manifest) {
  write_text_file(folder + "/" + kManifestName, manifest.to_json().dump(2) + "\n");
}

bool has_manifest(const std::string& folder) {
  return std::filesystem::is_regular_file(std::filesystem::path(folder) / kManifestName);
}

Manifest read_manifest(const std::string& folder) {
  std::string path = folder + "/" + kManifestName;
  std::ifstream in(path);
  if (!in) fail_errno(errno, "open", path);
  std::stringstream text;
  text << in.rdbuf();
  json document = json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded()) {
    fail(ErrorCode::kInvalidMetadata, "{}: expected a JSON document, found unparsable text", path);
  }
  return Manifest::from_json(document);
}

}  // namespace chute::synth
