#include "chute/synth/manifest.h"

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "chute/synth/zarr_writer.h"
#include "chute/util/error.h"
#include "chute/util/json_limits.h"

namespace chute::synth {
using nlohmann::json;

namespace {
// Reading a FIFO with std::ifstream would block for a writer forever.
bool fs_is_fifo_or_special(const std::string& path, std::error_code& ec) {
  const auto status = std::filesystem::status(path, ec);
  return !ec && std::filesystem::exists(status) && !std::filesystem::is_regular_file(status);
}
}  // namespace

json Manifest::to_json() const {
  return {{"workload", workload},
          {"zarr_format", zarr_format},
          {"created_by", created_by},
          {"chute_version", "0.1.0"},
          {"arrays", arrays},
          {"options", options},
          {"stats", {{"logical_bytes", logical_bytes}, {"stored_bytes", stored_bytes}}},
          {"entries", entries}};
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
  if (document.contains("entries") && document["entries"].is_array()) {
    for (const json& entry : document["entries"]) {
      if (!entry.is_string()) {
        fail(ErrorCode::kInvalidMetadata, "chute.json: expected entries to be names, found {}",
             entry.dump());
      }
      m.entries.push_back(entry.get<std::string>());
    }
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

void remove_dataset(const std::string& folder) {
  namespace fs = std::filesystem;
  const Manifest manifest = read_manifest(folder);
  if (manifest.entries.empty()) {
    fail(ErrorCode::kInvalidArgument,
         "{}: its {} does not list what chute wrote (made by an older chute), so --force "
         "will not delete it; remove the folder yourself",
         folder, kManifestName);
  }
  for (const std::string& entry : manifest.entries) {
    if (entry.empty() || entry == "." || entry == ".." || entry.find('/') != std::string::npos ||
        entry.find('\0') != std::string::npos) {
      fail(ErrorCode::kInvalidArgument, "{}: {} lists '{}', not a name inside the folder", folder,
           kManifestName, entry);
    }
  }
  std::vector<std::string> foreign;
  std::error_code ec;
  for (const auto& item : fs::directory_iterator(folder, ec)) {
    const std::string name = item.path().filename().string();
    if (std::find(manifest.entries.begin(), manifest.entries.end(), name) ==
        manifest.entries.end()) {
      foreign.push_back(name);
    }
  }
  if (ec) fail_errno(ec.value(), "list", folder);
  if (!foreign.empty()) {
    std::sort(foreign.begin(), foreign.end());
    std::string names;
    for (const std::string& name : foreign) names += (names.empty() ? "" : ", ") + name;
    fail(ErrorCode::kInvalidArgument,
         "{}: holds {} entries chute did not write ({}); --force deletes only a dataset chute "
         "made, so nothing was deleted",
         folder, foreign.size(), names);
  }
  for (const std::string& entry : manifest.entries) {
    if (entry == kManifestName) continue;  // last: a failure midway leaves it to retry with
    fs::remove_all(fs::path(folder) / entry, ec);
    if (ec) fail_errno(ec.value(), "remove", (fs::path(folder) / entry).string());
  }
  fs::remove(fs::path(folder) / kManifestName, ec);
  if (ec) fail_errno(ec.value(), "remove", folder + "/" + kManifestName);
}

Manifest read_manifest(const std::string& folder) {
  std::string path = folder + "/" + kManifestName;
  if (std::error_code ec; fs_is_fifo_or_special(path, ec)) {
    fail(ErrorCode::kIoError, "'{}' is not a regular file", path);
  }
  std::ifstream in(path);
  if (!in) fail_errno(errno, "open", path);
  std::stringstream text;
  text << in.rdbuf();
  check_json_limits(text.str(), path);
  json document = json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded()) {
    fail(ErrorCode::kInvalidMetadata, "{}: expected a JSON document, found unparsable text", path);
  }
  return Manifest::from_json(document);
}

}  // namespace chute::synth
