#pragma once
// Writing Zarr v2 and v3 arrays and groups to a local folder: metadata documents, chunks encoded
// with the same CodecChain the reader uses, and consolidated metadata for xarray. Used by
// `chute make-dataset` and by tests that need real arrays on disk.

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "chute/array/dtype.h"
#include "chute/array/metadata.h"
#include "chute/codec/codec_chain.h"
#include "chute/util/byte_buffer.h"

namespace chute::synth {

/// A named compression setting: "none", "blosc-lz4" (lz4, clevel 5, byte shuffle), "blosc-zstd"
/// (zstd, clevel 3, byte shuffle), "zstd" (level 3), "gzip" (level 5).
struct CodecPreset {
  std::string name;
  /// The bytes->bytes codec in v3 form (name + configuration), absent for "none".
  std::vector<CodecSpec> compressors;
  /// The numcodecs compressor document for v2 `.zarray` (null for "none").
  nlohmann::json v2_compressor;
};

/// Throws kInvalidArgument listing the known names when `name` is unknown.
CodecPreset codec_preset(const std::string& name);
const std::vector<std::string>& codec_preset_names();

struct ArraySpec {
  int zarr_format = 2;
  std::vector<int64_t> shape;
  std::vector<int64_t> chunk_shape;
  DataType data_type;  // float32 unless set
  /// As written in the metadata: a number, "NaN", or null (no fill value; v3 has none, so 0).
  nlohmann::json fill_value = 0;
  std::vector<std::string> dimension_names;  // empty or one per axis (v2: _ARRAY_DIMENSIONS)
  nlohmann::json attributes = nlohmann::json::object();
  std::string codec = "blosc-lz4";  // a codec_preset() name
  /// blosc's block size in bytes for the blosc presets; 0 lets blosc choose (512 KiB for a
  /// 1 MiB float32 chunk at clevel 5).
  int64_t blosc_blocksize = 0;
  /// Zarr v3 only: non-empty makes each chunk of `chunk_shape` a shard (sharding_indexed, index
  /// at the end, crc32c) holding inner chunks of this shape, each encoded with `codec`. It must
  /// divide chunk_shape. Readers then read and decode inner chunks, not whole shards.
  std::vector<int64_t> inner_chunk_shape;
};

/// Writes one array's metadata on construction and then any of its chunks, from any thread.
class ArrayWriter {
 public:
  /// Creates folder `path` (which must not hold an array yet) and writes the metadata.
  /// Throws kInvalidArgument on an inconsistent spec, kIoError when the folder cannot be written.
  ArrayWriter(std::string path, ArraySpec spec);

  const ArraySpec& spec() const { return spec_; }
  const std::string& path() const { return path_; }
  /// The metadata documents written, by file name relative to the array folder
  /// (".zarray" and ".zattrs" for v2, "zarr.json" for v3), for consolidation.
  const nlohmann::json& documents() const { return documents_; }

  int64_t chunk_count() const;
  /// Grid coordinates of chunk number `index` (C order over the chunk grid).
  std::vector<int64_t> chunk_coords(int64_t index) const;
  int64_t chunk_elements() const;
  int64_t chunk_nbytes() const { return chunk_elements() * spec_.data_type.size; }

  /// Encodes one decoded chunk (C order, native byte order, chunk_nbytes() bytes) and writes it.
  /// Returns the stored size. Thread-safe; `scratch` and `encoded` belong to the calling thread.
  int64_t write_chunk(std::span<const int64_t> coords, std::span<const std::byte> decoded,
                      CodecScratch& scratch, ByteBuffer& encoded) const;

  /// Writes a whole array that fits in one call (C order, all elements), chunk by chunk.
  /// Returns the stored size.
  int64_t write_all(std::span<const std::byte> data) const;

 private:
  std::string chunk_path(std::span<const int64_t> coords) const;

  std::string path_;
  ArraySpec spec_;
  std::vector<int64_t> grid_;
  CodecChainPtr chain_;
  nlohmann::json documents_;
};

/// Creates a group folder at `path` with its metadata (.zgroup + .zattrs, or zarr.json).
void write_group(const std::string& path, int zarr_format,
                 const nlohmann::json& attributes = nlohmann::json::object());

/// Writes consolidated metadata for the group at `path` from every metadata document below it:
/// v2 `.zmetadata` (zarr_consolidated_format 1), v3 `consolidated_metadata` inside zarr.json.
void consolidate_metadata(const std::string& path, int zarr_format);

/// Writes `bytes` to the file at `path` (created or truncated). Throws via fail_errno.
void write_file(const std::string& path, std::span<const std::byte> bytes);
void write_text_file(const std::string& path, const std::string& text);

}  // namespace chute::synth
