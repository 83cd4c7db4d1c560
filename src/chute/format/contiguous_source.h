#pragma once
// The chunk source of arrays stored uncompressed in one region of one file, in C or Fortran
// order (an .npy file, a contiguous HDF5 dataset). The file is mapped and boxes are copied out
// of the page cache: for a 64³ crop of a 1024³ float32 channel (4,096 runs of 256 bytes) that
// beats a pread per run and a preadv per plane by 4-14× (docs/design/reading.md). The read grid is
// virtual: slabs of about 256 KiB contiguous in the file, so a large read spreads over the pool.

#include <memory>
#include <string>
#include <vector>

#include "chute/array/chunk_source.h"
#include "chute/store/single_file_store.h"
#include "chute/vocab/dtype.h"

namespace chute {

class ContiguousSource final : public ChunkSource {
 public:
  /// Elements of `data_type` (stored in `endian` order) of `shape` from byte `offset` of
  /// `file`. Throws kCorruptData naming `name` when the file is too short to hold them.
  ContiguousSource(std::shared_ptr<const SingleFileStore> file, uint64_t offset,
                   std::vector<int64_t> shape, DataType data_type, Endian endian,
                   bool fortran_order, const std::string& name);

  const std::vector<int64_t>& chunk_shape() const override { return chunk_shape_; }
  const CodecChain& chain() const override { return *chain_; }
  ChunkLocation locate(std::span<const int64_t> coords, ReadScratch& scratch,
                       ReadStats* stats) const override;
  const MappedElements* mapped() const override { return &mapped_; }
  std::string storage_key(std::span<const int64_t> coords) const override { return {}; }
  /// The bytes of one slab of the read grid (stored uncompressed).
  std::optional<uint64_t> stored_nbytes(std::span<const int64_t> coords) const override {
    return chunk_nbytes_;
  }
  const Store& store() const override { return *file_; }
  StorePtr store_ptr() const override { return file_; }

  /// The codec specs that describe the stored elements (one bytes codec), for metadata.
  const std::vector<CodecSpec>& codec_specs() const { return specs_; }

 private:
  std::shared_ptr<const SingleFileStore> file_;
  std::vector<int64_t> chunk_shape_;
  uint64_t chunk_nbytes_ = 0;
  std::vector<CodecSpec> specs_;
  CodecChainPtr chain_;
  MappedElements mapped_;
};

/// The virtual read grid of a contiguous region: whole along the fastest stored axes, split
/// along one axis into slabs of about `target_bytes` (in array axis order).
std::vector<int64_t> contiguous_slab_shape(std::span<const int64_t> shape, int64_t item_size,
                                           bool fortran_order, int64_t target_bytes = 256 << 10);

}  // namespace chute
