#include "chute/synth/zarr_writer.h"

#include <fcntl.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <map>

#include "chute/format/fill_value.h"
#include "chute/util/error.h"

namespace chute::synth {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

CodecSpec spec_of(std::string name, json configuration) {
  CodecSpec spec;
  spec.name = std::move(name);
  spec.configuration = std::move(configuration);
  return spec;
}

CodecPreset blosc_preset(const std::string& name, const std::string& cname, int clevel) {
  CodecPreset preset;
  preset.name = name;
  // typesize is filled in per array (it is the element size) by ArrayWriter.
  preset.compressors.push_back(spec_of(
      "blosc", {{"cname", cname}, {"clevel", clevel}, {"shuffle", "shuffle"}, {"blocksize", 0}}));
  preset.v2_compressor = {
      {"id", "blosc"}, {"cname", cname}, {"clevel", clevel}, {"shuffle", 1}, {"blocksize", 0}};
  return preset;
}

/// The sharding_indexed codec whose inner chunks are encoded with `inner` (the index: 64-bit
/// little-endian offsets and sizes, then crc32c, at the end of the shard: zarr-python's default).
CodecSpec sharding_spec(const std::vector<CodecSpec>& inner_chain,
                        const std::vector<int64_t>& inner_chunk_shape) {
  json codecs = json::array();
  for (const auto& c : inner_chain) {
    codecs.push_back({{"name", c.name}, {"configuration", c.configuration}});
  }
  return spec_of(
      "sharding_indexed",
      {{"chunk_shape", inner_chunk_shape},
       {"codecs", codecs},
       {"index_codecs", json::array({{{"name", "bytes"}, {"configuration", {{"endian", "little"}}}},
                                     {{"name", "crc32c"}, {"configuration", json::object()}}})},
       {"index_location", "end"}});
}

json read_json_file(const fs::path& path) {
  std::ifstream in(path);
  if (!in) fail_errno(errno, "open", path.string());
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    fail(ErrorCode::kInvalidMetadata, "{}: expected a JSON document: {}", path.string(), e.what());
  }
}

void write_json_file(const fs::path& path, const json& document) {
  write_text_file(path.string(), document.dump(2) + "\n");
}

void make_directories(const fs::path& path) {
  std::error_code ec;
  fs::create_directories(path, ec);
  if (ec) fail_errno(ec.value(), "create folder", path.string());
}

}  // namespace

const std::vector<std::string>& codec_preset_names() {
  static const std::vector<std::string> names = {"none", "blosc-lz4", "blosc-zstd", "zstd", "gzip"};
  return names;
}

CodecPreset codec_preset(const std::string& name) {
  if (name == "none") return CodecPreset{name, {}, nullptr};
  if (name == "blosc-lz4") return blosc_preset(name, "lz4", 5);
  if (name == "blosc-zstd") return blosc_preset(name, "zstd", 3);
  if (name == "zstd") {
    return CodecPreset{name,
                       {spec_of("zstd", {{"level", 3}, {"checksum", false}})},
                       {{"id", "zstd"}, {"level", 3}}};
  }
  if (name == "gzip") {
    return CodecPreset{name, {spec_of("gzip", {{"level", 5}})}, {{"id", "gzip"}, {"level", 5}}};
  }
  std::string known;
  for (const auto& n : codec_preset_names()) known += (known.empty() ? "" : ", ") + n;
  fail(ErrorCode::kInvalidArgument, "unknown codec '{}': expected one of {}", name, known);
}

void write_file(const std::string& path, std::span<const std::byte> bytes) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail_errno(errno, "create", path);
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      fail_errno(err, "write", path);
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) fail_errno(errno, "close", path);
}

void write_text_file(const std::string& path, const std::string& text) {
  write_file(path, std::as_bytes(std::span(text.data(), text.size())));
}

ArrayWriter::ArrayWriter(std::string path, ArraySpec spec)
    : path_(std::move(path)), spec_(std::move(spec)) {
  const size_t rank = spec_.shape.size();
  if (spec_.zarr_format != 2 && spec_.zarr_format != 3) {
    fail(ErrorCode::kInvalidArgument, "{}: expected zarr format 2 or 3, got {}", path_,
         spec_.zarr_format);
  }
  if (spec_.chunk_shape.size() != rank) {
    fail(ErrorCode::kInvalidArgument, "{}: expected a chunk shape of rank {}, got rank {}", path_,
         rank, spec_.chunk_shape.size());
  }
  if (!spec_.dimension_names.empty() && spec_.dimension_names.size() != rank) {
    fail(ErrorCode::kInvalidArgument, "{}: expected {} dimension names, got {}", path_, rank,
         spec_.dimension_names.size());
  }
  for (size_t d = 0; d < rank; ++d) {
    if (spec_.shape[d] < 0 || spec_.chunk_shape[d] < 1) {
      fail(ErrorCode::kInvalidArgument,
           "{}: axis {}: expected shape >= 0 and chunk >= 1, got {} and {}", path_, d,
           spec_.shape[d], spec_.chunk_shape[d]);
    }
    grid_.push_back((spec_.shape[d] + spec_.chunk_shape[d] - 1) / spec_.chunk_shape[d]);
  }

  if (!spec_.inner_chunk_shape.empty()) {
    if (spec_.zarr_format != 3) {
      fail(ErrorCode::kInvalidArgument, "{}: inner chunks (sharding) need zarr format 3, got {}",
           path_, spec_.zarr_format);
    }
    bool divides = spec_.inner_chunk_shape.size() == rank;
    for (size_t d = 0; divides && d < rank; ++d) {
      const int64_t inner = spec_.inner_chunk_shape[d];
      divides = inner >= 1 && spec_.chunk_shape[d] % inner == 0;
    }
    if (!divides) {
      fail(ErrorCode::kInvalidArgument,
           "{}: expected inner chunks [{}] to divide the shard (chunk) shape [{}]", path_,
           fmt::join(spec_.inner_chunk_shape, ", "), fmt::join(spec_.chunk_shape, ", "));
    }
  }
  CodecPreset preset = codec_preset(spec_.codec);
  std::vector<CodecSpec> chain;
  chain.push_back(spec_of("bytes", {{"endian", "little"}}));
  if (spec_.blosc_blocksize < 0) {
    fail(ErrorCode::kInvalidArgument, "{}: expected a blosc block size >= 0, got {}", path_,
         spec_.blosc_blocksize);
  }
  if (preset.v2_compressor.is_object() && preset.v2_compressor.value("id", "") == "blosc") {
    preset.v2_compressor["blocksize"] = spec_.blosc_blocksize;
  }
  for (auto compressor : preset.compressors) {
    if (compressor.name == "blosc") {
      compressor.configuration["typesize"] = spec_.data_type.size;
      compressor.configuration["blocksize"] = spec_.blosc_blocksize;
    }
    chain.push_back(std::move(compressor));
  }
  if (spec_.inner_chunk_shape.empty()) {
    chain_ = CodecChain::create(chain, spec_.data_type, spec_.chunk_shape);
  } else {
    // Inner chunks equal to the fill value are left out of the shard (they read as it).
    chain = {sharding_spec(chain, spec_.inner_chunk_shape)};
    const json fill = spec_.fill_value.is_null() ? json(0) : spec_.fill_value;
    chain_ = CodecChain::create(chain, spec_.data_type, spec_.chunk_shape,
                                encode_fill_value(fill, spec_.data_type, path_));
  }

  if (fs::exists(fs::path(path_) / ".zarray") || fs::exists(fs::path(path_) / "zarr.json")) {
    fail(ErrorCode::kInvalidArgument, "{}: expected a new array folder, found an existing array",
         path_);
  }
  make_directories(path_);
  if (spec_.zarr_format == 2) {
    json zarray = {{"zarr_format", 2},
                   {"shape", spec_.shape},
                   {"chunks", spec_.chunk_shape},
                   {"dtype", spec_.data_type.numpy_str()},
                   {"fill_value", spec_.fill_value},
                   {"order", "C"},
                   {"filters", nullptr},
                   {"compressor", preset.v2_compressor},
                   {"dimension_separator", "."}};
    json zattrs = spec_.attributes;
    if (!spec_.dimension_names.empty() || rank == 0) {
      zattrs["_ARRAY_DIMENSIONS"] = spec_.dimension_names;  // xarray needs [] for 0-d arrays
    }
    documents_[".zarray"] = zarray;
    documents_[".zattrs"] = zattrs;
  } else {
    json codecs = json::array();
    for (const auto& c : chain)
      codecs.push_back({{"name", c.name}, {"configuration", c.configuration}});
    json doc = {
        {"zarr_format", 3},
        {"node_type", "array"},
        {"shape", spec_.shape},
        {"data_type", spec_.data_type.name()},
        {"chunk_grid",
         {{"name", "regular"}, {"configuration", {{"chunk_shape", spec_.chunk_shape}}}}},
        {"chunk_key_encoding", {{"name", "default"}, {"configuration", {{"separator", "/"}}}}},
        {"fill_value", spec_.fill_value.is_null() ? json(0) : spec_.fill_value},
        {"codecs", codecs},
        {"attributes", spec_.attributes}};
    if (!spec_.dimension_names.empty()) doc["dimension_names"] = spec_.dimension_names;
    documents_["zarr.json"] = doc;
  }
  for (const auto& [file, doc] : documents_.items()) write_json_file(fs::path(path_) / file, doc);
}

int64_t ArrayWriter::chunk_count() const {
  int64_t n = 1;
  for (int64_t g : grid_) n *= g;
  return n;
}

std::vector<int64_t> ArrayWriter::chunk_coords(int64_t index) const {
  std::vector<int64_t> coords(grid_.size());
  for (size_t d = grid_.size(); d-- > 0;) {
    coords[d] = index % grid_[d];
    index /= grid_[d];
  }
  return coords;
}

int64_t ArrayWriter::chunk_elements() const {
  int64_t n = 1;
  for (int64_t c : spec_.chunk_shape) n *= c;
  return n;
}

std::string ArrayWriter::chunk_path(std::span<const int64_t> coords) const {
  std::string key;
  if (spec_.zarr_format == 2) {
    for (size_t d = 0; d < coords.size(); ++d) key += (d ? "." : "") + std::to_string(coords[d]);
    if (coords.empty()) key = "0";
  } else {
    key = "c";
    for (int64_t c : coords) key += "/" + std::to_string(c);
  }
  return path_ + "/" + key;
}

int64_t ArrayWriter::write_chunk(std::span<const int64_t> coords,
                                 std::span<const std::byte> decoded, CodecScratch& scratch,
                                 ByteBuffer& encoded) const {
  if (static_cast<int64_t>(decoded.size()) != chunk_nbytes()) {
    fail(ErrorCode::kInvalidArgument, "{}: expected a decoded chunk of {} bytes, got {}", path_,
         chunk_nbytes(), decoded.size());
  }
  chain_->encode(decoded, encoded, scratch);
  std::string file = chunk_path(coords);
  if (spec_.zarr_format == 3 && !coords.empty()) {
    make_directories(fs::path(file).parent_path());
  }
  write_file(file, encoded.span());
  return static_cast<int64_t>(encoded.size());
}

int64_t ArrayWriter::write_all(std::span<const std::byte> data) const {
  const size_t rank = spec_.shape.size();
  const int64_t item = spec_.data_type.size;
  std::vector<int64_t> array_strides(rank, 1), chunk_strides(rank, 1);
  for (size_t d = rank; d-- > 1;) {
    array_strides[d - 1] = array_strides[d] * spec_.shape[d];
    chunk_strides[d - 1] = chunk_strides[d] * spec_.chunk_shape[d];
  }
  int64_t elements = 1;
  for (int64_t n : spec_.shape) elements *= n;
  if (static_cast<int64_t>(data.size()) != elements * item) {
    fail(ErrorCode::kInvalidArgument, "{}: expected {} bytes of array data, got {}", path_,
         elements * item, data.size());
  }
  CodecScratch scratch;
  ByteBuffer encoded;
  std::vector<std::byte> chunk(static_cast<size_t>(chunk_nbytes()));
  const int64_t row_length = rank ? spec_.chunk_shape[rank - 1] : 1;
  const int64_t rows = chunk_elements() / row_length;
  int64_t stored = 0;
  for (int64_t c = 0; c < chunk_count(); ++c) {
    const auto coords = chunk_coords(c);
    std::fill(chunk.begin(), chunk.end(), std::byte{0});
    for (int64_t r = 0; r < rows; ++r) {  // copy each innermost row that lies inside the array
      int64_t rest = r, src = 0, dst = 0, n = row_length;
      bool inside = true;
      for (size_t d = rank; d-- > 0;) {
        int64_t in_chunk = d + 1 == rank ? 0 : rest % spec_.chunk_shape[d];
        if (d + 1 != rank) rest /= spec_.chunk_shape[d];
        int64_t global = coords[d] * spec_.chunk_shape[d] + in_chunk;
        if (global >= spec_.shape[d]) inside = false;
        if (d + 1 == rank) n = std::min(n, spec_.shape[d] - global);
        src += global * array_strides[d];
        dst += in_chunk * chunk_strides[d];
      }
      if (inside) std::copy_n(data.data() + src * item, n * item, chunk.data() + dst * item);
    }
    stored += write_chunk(coords, chunk, scratch, encoded);
  }
  return stored;
}

void write_group(const std::string& path, int zarr_format, const json& attributes) {
  make_directories(path);
  if (zarr_format == 2) {
    write_json_file(fs::path(path) / ".zgroup", {{"zarr_format", 2}});
    write_json_file(fs::path(path) / ".zattrs", attributes);
  } else {
    write_json_file(fs::path(path) / "zarr.json",
                    {{"zarr_format", 3}, {"node_type", "group"}, {"attributes", attributes}});
  }
}

void consolidate_metadata(const std::string& path, int zarr_format) {
  const fs::path root(path);
  std::map<std::string, json> found;  // relative key -> document, sorted for stable output
  static const char* const kV2Names[] = {".zarray", ".zattrs", ".zgroup"};
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator();
       ++it) {
    if (!it->is_regular_file()) continue;
    std::string name = it->path().filename().string();
    std::string relative = fs::relative(it->path(), root).generic_string();
    if (zarr_format == 2) {
      if (std::find(std::begin(kV2Names), std::end(kV2Names), name) != std::end(kV2Names)) {
        found[relative] = read_json_file(it->path());
      }
    } else if (name == "zarr.json" && relative != "zarr.json") {
      found[fs::relative(it->path().parent_path(), root).generic_string()] =
          read_json_file(it->path());
    }
  }
  if (zarr_format == 2) {
    json metadata = json::object();
    for (auto& [key, doc] : found) metadata[key] = std::move(doc);
    write_json_file(root / ".zmetadata", {{"metadata", metadata}, {"zarr_consolidated_format", 1}});
  } else {
    json metadata = json::object();
    for (auto& [key, doc] : found) {
      if (doc.value("node_type", "") == "group") doc["consolidated_metadata"] = nullptr;
      metadata[key] = std::move(doc);
    }
    json group = read_json_file(root / "zarr.json");
    group["consolidated_metadata"] = {
        {"kind", "inline"}, {"must_understand", false}, {"metadata", metadata}};
    write_json_file(root / "zarr.json", group);
  }
}

}  // namespace chute::synth
