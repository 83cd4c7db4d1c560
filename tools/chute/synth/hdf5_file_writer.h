#pragma once
// A writer of small HDF5 files without libhdf5, for make-dataset: float32 datasets in the root
// group, contiguous or chunked, written in one pass. The file is what libhdf5 1.10+ writes with
// libver "v110" and later: superblock version 3, version 2 object headers with checksums, the
// root group's links as compact link messages, a chunked dataset's chunks indexed by a fixed
// array (layout message version 4; paged past 1,024 chunks, as libhdf5 pages them), a filter
// pipeline message version 2. Metadata is laid out before any data: the file begins with the
// superblock, the object headers and the chunk indexes; data follows, contiguous datasets at
// offsets fixed at construction and chunks wherever append_chunk() puts them. Nothing on disk
// is a valid HDF5 file until finish() has written the metadata.
//
// Thread safety: write_contiguous() and append_chunk() may be called from many threads at once
// (append_chunk() reserves its bytes atomically and writes with pwrite); finish() once, after.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "chute/format/hdf5_filters.h"

namespace chute::synth {

struct Hdf5DatasetLayout {
  std::string name;                  // a link name in the root group (no '/')
  std::vector<int64_t> shape;        // float32 elements, C order
  std::vector<int64_t> chunk_shape;  // empty: contiguous
  std::vector<Hdf5Filter> filters;   // chunked only, in the order they were applied
};

class Hdf5FileWriter {
 public:
  /// Creates (or truncates) `path` and lays the file out.
  Hdf5FileWriter(std::string path, std::vector<Hdf5DatasetLayout> datasets);
  ~Hdf5FileWriter();
  Hdf5FileWriter(const Hdf5FileWriter&) = delete;
  Hdf5FileWriter& operator=(const Hdf5FileWriter&) = delete;

  /// Writes `bytes` at byte `offset` of contiguous dataset `d`'s elements.
  void write_contiguous(size_t d, uint64_t offset, std::span<const std::byte> bytes);

  /// Writes chunk `linear` (row-major over the chunk grid) of dataset `d`, already passed
  /// through its filters (`filter_mask`: bit i set when filter i was skipped for this chunk).
  void append_chunk(size_t d, uint64_t linear, std::span<const std::byte> stored,
                    uint32_t filter_mask = 0);

  /// Writes the metadata: after it the file is complete. Every chunk must have been appended.
  void finish();

  /// Total bytes of the file once finished (metadata and data).
  uint64_t size() const { return end_.load(); }

 private:
  struct Dataset {
    Hdf5DatasetLayout layout;
    uint64_t header_address = 0;  // its object header
    uint64_t data_address = 0;    // contiguous: its elements
    uint64_t index_address = 0;   // chunked: the fixed array header, then its data block
    uint64_t index_block_address = 0;
    uint64_t chunk_count = 0;
    uint64_t chunk_bytes = 0;  // an unfiltered chunk
    std::vector<uint64_t> chunk_address, chunk_size;
    std::vector<uint32_t> chunk_mask;
  };
  /// The metadata's bytes, from the superblock to the last index block; sets metadata_size_.
  std::vector<std::byte> metadata();

  std::string path_;
  int fd_ = -1;
  std::vector<Dataset> datasets_;
  uint64_t root_address_ = 0;
  uint64_t metadata_size_ = 0;
  std::atomic<uint64_t> end_{0};
  bool finished_ = false;
};

}  // namespace chute::synth
