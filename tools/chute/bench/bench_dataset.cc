#include "chute/bench/bench_dataset.h"

#include <chrono>
#include <filesystem>
#include <optional>

#include "chute/bench/machine.h"
#include "chute/codec/codec_chain.h"
#include "chute/dataset/many_files.h"
#include "chute/dataset/packed_dataset.h"
#include "chute/dataset/window_dataset.h"
#include "chute/format/open.h"
#include "chute/synth/manifest.h"
#include "chute/util/error.h"

namespace chute::bench {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

int64_t bytes_on_disk(const std::string& path);

int64_t bytes_on_disk(const std::vector<std::string>& paths) {
  int64_t total = 0;
  for (const std::string& path : paths) total += bytes_on_disk(path);
  return total;
}

int64_t bytes_on_disk(const std::string& path) {
  if (is_glob(path)) {  // files joined along time
    int64_t total = 0;
    for (const std::string& file : expand_glob(path)) total += bytes_on_disk(file);
    return total;
  }
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) return static_cast<int64_t>(fs::file_size(path, ec));
  int64_t total = 0;
  for (auto it = fs::recursive_directory_iterator(path, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file(ec)) total += static_cast<int64_t>(it->file_size(ec));
  }
  return total;
}

json describe_array(const std::string& name, const std::string& path, const Array& array) {
  const ArrayMetadata& m = array.metadata();
  return {{"name", name},
          {"path", path},
          {"shape", m.shape},
          {"chunks", m.chunk_shape},
          {"dtype", m.data_type.name()},
          {"codecs", array.codecs().describe()},
          {"chunk_bytes", m.chunk_nbytes()}};
}

void open_packed(BenchDataset& out) {
  std::vector<std::pair<std::string, ArrayPtr>> arrays;
  for (const auto& [name, path] : out.packed_arrays) arrays.emplace_back(name, open_array(path));
  auto dataset = std::make_shared<PackedDataset>(arrays);
  for (size_t i = 0; i < arrays.size(); ++i) {
    out.description["arrays"].push_back(
        describe_array(arrays[i].first, out.packed_arrays[i].second, *arrays[i].second));
    out.stored_bytes += bytes_on_disk(out.packed_arrays[i].second);
  }
  out.dataset = std::move(dataset);
}

WindowOptions window_options(const WindowsFlags& flags) {
  WindowOptions options;
  options.variables = flags.variables;
  options.target_variables = flags.target_variables;
  options.forcings = flags.forcings;
  options.statics = flags.statics;
  options.computed_forcings = flags.computed_forcings;
  options.level_values = flags.levels;
  options.input_offsets = flags.input_offsets;
  options.target_offsets = flags.target_offsets;
  options.statistics = flags.statistics;
  options.channels_last = flags.channels_last;
  options.stage_channels_last = !flags.direct_placement;
  options.output_dtype = parse_v3_data_type(flags.dtype);
  return options;
}

void open_variables(BenchDataset& out, const synth::Manifest* manifest, const WindowsFlags& flags) {
  WindowOptions options = window_options(flags);
  if (manifest && options.variables.empty()) {
    for (const char* key : {"variables_3d", "variables_2d"}) {
      if (manifest->options.contains(key)) {
        for (const auto& name : manifest->options[key]) options.variables.push_back(name);
      }
    }
  }
  if (manifest && flags.normalise) {
    options.mean_suffix = "mean/{}";
    options.std_suffix = "std/{}";
  }
  if (options.variables.empty()) {
    fail(ErrorCode::kInvalidArgument, "{}: no variables to window (give --variables)", out.path);
  }
  std::optional<JoinedFiles> joined;
  if (names_many_files(flags, out.path)) {
    ManyFilesOptions many_options;
    many_options.allow_gaps = flags.allow_gaps;
    many_options.file_pattern = flags.file_pattern;
    if (flags.file_pattern.empty() != flags.file_step.empty()) {
      fail(ErrorCode::kInvalidArgument,
           "--file-pattern and --file-step go together (the members' times from their names)");
    }
    if (!flags.file_step.empty()) {
      many_options.step_seconds = parse_step_seconds(flags.file_step, "--file-step");
    }
    many_options.channels = flags.channels;
    many_options.channel_array = flags.channel_array;
    const std::vector<std::string> files = !flags.members.empty() ? flags.members
                                           : is_glob(out.path)    ? expand_glob(out.path)
                                                                  : std::vector{out.path};
    joined = open_many_files(files, many_options);
  }
  auto dataset = joined ? make_joined_window_dataset(*joined, options)
                        : open_window_dataset(out.path, options);
  out.windows = {{"store", out.path},
                 {"variables", options.variables},
                 {"target_variables", options.target_variables},
                 {"forcings", options.forcings},
                 {"computed_forcings", options.computed_forcings},
                 {"statics", options.statics},
                 {"levels", flags.levels},
                 {"input_offsets", options.input_offsets},
                 {"target_offsets", options.target_offsets},
                 {"statistics", flags.statistics},
                 {"normalise", manifest != nullptr && flags.normalise},
                 {"channels_last", flags.channels_last},
                 {"dtype", flags.dtype}};
  if (joined) {
    out.windows["members"] = joined->members;  // in time order
    out.windows["many_files"] = {{"file_pattern", flags.file_pattern},
                                 {"file_step", flags.file_step},
                                 {"channels", flags.channels},
                                 {"channel_array", flags.channel_array},
                                 {"allow_gaps", flags.allow_gaps}};
  }
  out.description["windows"] = out.windows;
  const Group group = joined ? joined->group : open_group(out.path);
  for (const std::string& name : options.variables) {
    if (auto found = group.arrays.find(name); found != group.arrays.end()) {
      out.description["arrays"].push_back(
          describe_array(name, join_key(out.path, name), *found->second));
    }
  }
  out.stored_bytes = joined ? bytes_on_disk(joined->members) : bytes_on_disk(out.path);
  // The roofline counts decoded chunk bytes: a window's share is its planes as stored, whatever
  // the output dtype (report.cc, set_percentages).
  out.description["roofline_bytes_per_sample"] = dataset->decoded_bytes_per_sample();
  out.dataset = std::move(dataset);
}

/// An anemoi dataset cut as anemoi-training cuts it (anemoi_workload.h).
void open_anemoi(BenchDataset& out, const AnemoiFlags& flags, const WindowsFlags& windows) {
  const AnemoiBench opened =
      open_anemoi_bench(out.path, flags, windows.variables, windows.dtype, !windows.channels_last);
  out.anemoi = {{"store", out.path},
                {"variables", opened.variables},
                {"multistep_input", flags.multistep_input},
                {"rollout", flags.rollout},
                {"timeincrement", flags.timeincrement},
                {"normalise", flags.normalise},
                {"dtype", windows.dtype},
                {"variables_first", !windows.channels_last}};
  out.description["anemoi"] = out.anemoi;
  const std::string data_path = join_key(out.path, "data");
  out.description["arrays"].push_back(
      describe_array("data", data_path, *opened.dataset->options().sources.front()));
  out.stored_bytes = bytes_on_disk(data_path);
  out.description["roofline_bytes_per_sample"] = opened.dataset->stored_bytes_per_sample();
  out.anemoi_dataset = opened.dataset;
  out.dataset = opened.dataset;
}

/// W3: crops of the volume's input and target, from the form `settings` asks for.
void open_volume(BenchDataset& out, const synth::Manifest& manifest,
                 const VolumeSettings& settings) {
  const fs::path folder(out.path);
  std::string form = settings.form;
  std::vector<std::pair<std::string, std::string>> paths;
  std::optional<int64_t> channel_axis = 0;
  auto form_paths = [&](const std::string& f) -> std::vector<std::pair<std::string, std::string>> {
    if (f == "hdf5") {
      const std::string file = (folder / "volume.h5").string();
      return {{"inputs", file + "/Nbody"}, {"targets", file + "/Hydro"}};
    }
    if (f == "npy") {
      return {{"inputs", (folder / "input.npy").string()},
              {"targets", (folder / "target.npy").string()}};
    }
    if (f == "zarr") {
      return {{"inputs", (folder / manifest.arrays.at("input")).string()},
              {"targets", (folder / manifest.arrays.at("target")).string()}};
    }
    fail(ErrorCode::kInvalidArgument, "--volume-form: expected auto, zarr, hdf5 or npy, got '{}'",
         f);
  };
  std::vector<std::pair<std::string, ArrayPtr>> arrays;
  auto open_form = [&](const std::string& f) {
    paths = form_paths(f);
    arrays.clear();
    for (const auto& [name, path] : paths) arrays.emplace_back(name, open_array(path));
    channel_axis = f == "npy" ? std::optional<int64_t>(-1) : std::optional<int64_t>(0);
    form = f;
  };
  if (form == "auto") {
    std::error_code ec;
    if (fs::exists(folder / "volume.h5", ec)) {
      try {
        open_form("hdf5");
      } catch (const Error& e) {
        out.description["notes"].push_back(
            fmt::format("volume.h5 did not open ({}); measuring the Zarr form", e.what()));
        open_form("zarr");
      }
    } else {
      open_form("zarr");
    }
  } else {
    open_form(form);
  }
  CropOptions options;
  const int64_t edge = arrays.front().second->metadata().shape[1];
  options.size = {std::min(settings.crop_size, edge)};
  options.channel_axis = channel_axis;
  options.crops_per_epoch = settings.crops_per_epoch;
  options.transforms = settings.transforms;
  auto dataset = std::make_shared<CropDataset>(arrays, options);
  nlohmann::json channels = json::array();
  nlohmann::json named = json::object();
  for (size_t i = 0; i < arrays.size(); ++i) {
    out.description["arrays"].push_back(
        describe_array(arrays[i].first, paths[i].second, *arrays[i].second));
    const auto& shape = arrays[i].second->metadata().shape;
    channels.push_back(form == "npy" ? shape.back() : shape.front());
    named[arrays[i].first] = paths[i].second;
  }
  out.stored_bytes = bytes_on_disk(out.path);
  out.volume = {{"folder", out.path},
                {"form", form},
                {"size", dataset->size()[0]},
                {"grid", dataset->grid()},
                {"transforms", settings.transforms},
                {"channels", channels},
                {"arrays", named},
                {"zarr",
                 {(folder / manifest.arrays.at("input")).string(),
                  (folder / manifest.arrays.at("target")).string()}}};
  out.description["volume"] = out.volume;
  out.crops = dataset;
  out.dataset = std::move(dataset);
}

}  // namespace

bool names_many_files(const WindowsFlags& flags, const std::string& path) {
  return !flags.members.empty() || is_glob(path) || !flags.file_pattern.empty() ||
         !flags.file_step.empty() || !flags.channels.empty();
}

int64_t parse_step_seconds(const std::string& text, const std::string& what) {
  size_t end = 0;
  int64_t value = -1;
  try {
    value = std::stoll(text, &end);
  } catch (const std::exception&) {
    end = 0;
  }
  const std::string unit = end > 0 ? text.substr(end) : "";
  static const std::vector<std::pair<std::string, int64_t>> units = {
      {"", 1}, {"s", 1}, {"min", 60}, {"m", 60}, {"h", 3600}, {"d", 86400}};
  for (const auto& [name, seconds] : units) {
    if (end > 0 && value > 0 && unit == name) return value * seconds;
  }
  fail(ErrorCode::kInvalidArgument,
       "{}: expected a positive step such as 6h, 30min, 1d or 90s, got '{}'", what, text);
}

std::pair<std::string, std::string> parse_array_argument(const std::string& argument) {
  const size_t eq = argument.find('=');
  if (eq == std::string::npos) {
    std::string name = fs::path(argument).lexically_normal().filename().string();
    if (name.empty())
      name = fs::path(argument).lexically_normal().parent_path().filename().string();
    if (name.empty()) fail(ErrorCode::kInvalidArgument, "--array: cannot name '{}'", argument);
    return {fs::path(name).stem().string(), argument};
  }
  std::string name = argument.substr(0, eq), path = argument.substr(eq + 1);
  if (name.empty() || path.empty()) {
    fail(ErrorCode::kInvalidArgument, "--array: expected NAME=PATH, got '{}'", argument);
  }
  return {name, path};
}

BenchDataset open_bench_dataset(const std::string& folder,
                                const std::vector<std::pair<std::string, std::string>>& arrays,
                                const VolumeSettings& volume, const WindowsFlags& windows,
                                const AnemoiFlags& anemoi) {
  if (folder.empty() == arrays.empty()) {
    fail(ErrorCode::kInvalidArgument,
         "bench: expected a DATASET folder or --array NAME=PATH options, got {}",
         folder.empty() ? "neither" : "both");
  }
  const auto start = std::chrono::steady_clock::now();
  BenchDataset out;
  out.path = folder;
  out.description = {{"path", folder}, {"arrays", json::array()}};
  if (!folder.empty() && anemoi.enabled) {
    if (!windows.members.empty() || is_glob(folder)) {
      fail(ErrorCode::kInvalidArgument,
           "--anemoi: one store (concat and join of anemoi datasets are chute.anemoi's)");
    }
    out.workload = "anemoi";
    open_anemoi(out, anemoi, windows);
  } else if (!folder.empty() && (windows.enabled || names_many_files(windows, folder))) {
    out.workload = "variables";
    open_variables(out, nullptr, windows);
  } else if (!folder.empty() && synth::has_manifest(folder)) {
    const synth::Manifest manifest = synth::read_manifest(folder);
    out.workload = manifest.workload;
    if (manifest.workload == "packed") {
      for (const auto& [name, relative] : manifest.arrays) {
        out.packed_arrays.emplace_back(name, (fs::path(folder) / relative).string());
      }
      // The manifest's map is sorted by name; inputs before targets reads better.
      std::stable_sort(out.packed_arrays.begin(), out.packed_arrays.end(),
                       [](const auto& a, const auto& b) {
                         return (a.first == "inputs") > (b.first == "inputs");
                       });
      open_packed(out);
    } else if (manifest.workload == "variables") {
      open_variables(out, &manifest, windows);
    } else if (manifest.workload == "volume") {
      open_volume(out, manifest, volume);
    } else {
      fail(ErrorCode::kUnsupported,
           "{}: chute bench measures packed, variables and volume datasets, found workload '{}'",
           folder, manifest.workload);
    }
  } else {
    out.workload = "packed";
    if (!arrays.empty()) {
      out.packed_arrays = arrays;
      out.description["path"] = arrays.front().second;
    } else if (is_group(folder)) {
      for (const auto& [name, array] : open_group(folder).arrays) {
        out.packed_arrays.emplace_back(name, join_key(folder, name));
      }
      if (out.packed_arrays.empty())
        fail(ErrorCode::kInvalidArgument, "{}: group has no arrays", folder);
    } else {
      out.packed_arrays.emplace_back(parse_array_argument(folder).first, folder);
    }
    open_packed(out);
  }
  out.open_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  int64_t sample_bytes = 0;
  for (const OutputSpec& output : out.dataset->outputs()) sample_bytes += output.sample_nbytes();
  out.description["workload"] = out.workload;
  out.description["description"] = out.dataset->describe();
  out.description["samples"] = out.dataset->num_samples();
  out.description["sample_bytes"] = sample_bytes;
  out.description["stored_bytes"] = out.stored_bytes;
  out.description["fits_in_ram"] = out.stored_bytes < describe_machine().memory_available_bytes;
  out.description["open_seconds"] = out.open_seconds;
  return out;
}

}  // namespace chute::bench
