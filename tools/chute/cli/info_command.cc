// `chute info PATH [--json]`: metadata, chunk statistics and stored vs logical size of an array
// or of every array in a group.
#include <fmt/format.h>

#include <iostream>
#include <memory>

#include "array_info.h"
#include "chute/format/open.h"
#include "commands.h"
#include "output.h"

namespace chute::cli {
using nlohmann::json;

namespace {

std::string ratio_string(const json& ratio) {
  return ratio.is_number() ? fmt::format("{:.2f}:1", ratio.get<double>()) : "-";
}

// "zarr v2", "hdf5", "npy".
std::string format_label(const json& info) {
  std::string label = info["format"].get<std::string>();
  if (info["zarr_format"].is_number()) label += " v" + info["zarr_format"].dump();
  return label;
}

std::string join(const json& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + scalar_string(n);
  return s.empty() ? "-" : s;
}

std::string array_text(const json& info) {
  const json& chunks = info["chunks"];
  std::string out;
  out += field_line("path", info["name"].get<std::string>());
  out += field_line("node", "array");
  out += field_line("format", format_label(info));
  out += field_line("shape", shape_string(info["shape"]));
  out += field_line("chunk shape", shape_string(info["chunk_shape"]));
  if (!info["inner_chunk_shape"].is_null()) {
    out += field_line("inner chunks", shape_string(info["inner_chunk_shape"]));
  }
  out += field_line("dtype", fmt::format("{} ({})", scalar_string(info["dtype"]),
                                         scalar_string(info["numpy_dtype"])));
  out += field_line("fill value", scalar_string(info["fill_value"]));
  out += field_line("dimensions", join(info["dimension_names"]));
  out += field_line("codecs", info["codecs"].get<std::string>());
  out +=
      field_line("chunk grid",
                 fmt::format("{}: {} chunks, {} stored{}", shape_string(chunks["grid"]),
                             chunks["count"].dump(), chunks["stored"].dump(),
                             chunks["checked"] == chunks["count"]
                                 ? std::string()
                                 : fmt::format(" (of the first {} checked; the rest not looked at)",
                                               chunks["checked"].dump())));
  out += field_line("logical size",
                    fmt::format("{} ({} bytes)", human_bytes(info["logical_nbytes"].get<double>()),
                                info["logical_nbytes"].dump()));
  out += field_line(
      "stored size",
      fmt::format("{} ({} bytes), ratio {}", human_bytes(info["stored_nbytes"].get<double>()),
                  info["stored_nbytes"].dump(), ratio_string(info["ratio"])));
  std::string decoded = human_bytes(chunks["decoded_nbytes"].get<double>());
  if (!chunks["inner_decoded_nbytes"].is_null()) {
    decoded +=
        fmt::format(" (inner chunk {})", human_bytes(chunks["inner_decoded_nbytes"].get<double>()));
  }
  out += field_line("decoded chunk", decoded);
  if (chunks["stored"].get<int64_t>() > 0) {
    out += field_line("stored chunk",
                      fmt::format("mean {}, min {}, max {}",
                                  human_bytes(chunks["stored_nbytes_mean"].get<double>()),
                                  human_bytes(chunks["stored_nbytes_min"].get<double>()),
                                  human_bytes(chunks["stored_nbytes_max"].get<double>())));
  } else {
    out += field_line("stored chunk", "-");
  }
  out += field_line("attributes", info["attributes"].dump());
  return out;
}

std::string group_text(const json& info) {
  const json& totals = info["totals"];
  std::string out;
  out += field_line("path", info["name"].get<std::string>());
  out += field_line("node", "group");
  out += field_line("format", format_label(info));
  out += field_line("attributes", info["attributes"].dump());
  out += field_line("groups", join(info["groups"]));
  out += field_line("arrays",
                    fmt::format("{}: {} logical, {} stored, ratio {}", totals["arrays"].dump(),
                                human_bytes(totals["logical_nbytes"].get<double>()),
                                human_bytes(totals["stored_nbytes"].get<double>()),
                                ratio_string(totals["ratio"])));
  std::vector<std::vector<std::string>> rows = {
      {"name", "shape", "chunks", "dtype", "stored", "chunks stored", "ratio", "codecs"}};
  for (const auto& a : info["arrays"]) {
    rows.push_back({a["name"].get<std::string>(), shape_string(a["shape"]),
                    shape_string(a["chunk_shape"]), a["dtype"].get<std::string>(),
                    human_bytes(a["stored_nbytes"].get<double>()),
                    fmt::format("{}/{}", a["chunks"]["stored"].dump(), a["chunks"]["count"].dump()),
                    ratio_string(a["ratio"]), a["codecs"].get<std::string>()});
  }
  out += "\n" + table(rows);
  return out;
}

}  // namespace

void register_info(CLI::App& app) {
  struct Options {
    std::string path;
    bool json = false;
    CacheOptions cache;
  };
  auto options = std::make_shared<Options>();
  auto* info = app.add_subcommand("info", "Show an array's or a group's metadata and chunk sizes");
  info->add_option("PATH", options->path,
                   "a Zarr v2/v3 array or group folder (or group/member), an HDF5/NetCDF-4 file "
                   "(or file.h5/dataset), or a NumPy .npy file")
      ->required();
  info->add_flag("--json", options->json, "Print one JSON document instead of a table");
  add_cache_options(*info, options->cache);
  info->callback([options] {
    set_default_cache_options(options->cache);
    json result = is_group(options->path) ? group_info(open_group(options->path), options->path)
                                          : array_info(*open_array(options->path), options->path);
    if (options->json) {
      std::cout << result.dump(2) << "\n";
    } else {
      std::cout << (result["node_type"] == "group" ? group_text(result) : array_text(result));
    }
  });
}

}  // namespace chute::cli
