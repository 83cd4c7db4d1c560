#include "chute/format/contiguous_source.h"

#include <fmt/ranges.h>

#include <algorithm>

#include "chute/util/checked.h"
#include "chute/util/error.h"

namespace chute {

std::vector<int64_t> contiguous_slab_shape(std::span<const int64_t> shape, int64_t item_size,
                                           bool fortran_order, int64_t target_bytes) {
  const size_t n = shape.size();
  std::vector<int64_t> slab(n, 1);
  int64_t bytes = item_size;
  // Walk the stored axes from the fastest: take whole axes while they fit, then part of one.
  for (size_t i = 0; i < n; ++i) {
    const size_t d = fortran_order ? i : n - 1 - i;
    const int64_t extent = std::max<int64_t>(shape[d], 1);
    if (bytes * extent <= target_bytes) {
      slab[d] = extent;
      bytes *= extent;
      continue;
    }
    slab[d] = std::max<int64_t>(1, target_bytes / bytes);
    break;
  }
  return slab;
}

ContiguousSource::ContiguousSource(std::shared_ptr<const SingleFileStore> file, uint64_t offset,
                                   std::vector<int64_t> shape, DataType data_type, Endian endian,
                                   bool fortran_order, const std::string& name)
    : file_(std::move(file)) {
  const std::optional<int64_t> total =
      checked_product(shape, std::max<int64_t>(static_cast<int64_t>(data_type.size), 1));
  if (!total) {
    fail(ErrorCode::kCorruptData, "'{}': a shape of [{}] holds more than 2^63 bytes", name,
         fmt::join(shape, ", "));
  }
  const auto nbytes = static_cast<uint64_t>(*total);
  if (offset > file_->file_size() || file_->file_size() - offset < nbytes) {
    fail(ErrorCode::kCorruptData,
         "'{}' is truncated: expected {} bytes of data from offset {}, the file holds {} bytes",
         name, nbytes, offset, file_->file_size());
  }
  chunk_shape_ = contiguous_slab_shape(shape, data_type.size, fortran_order);
  chunk_nbytes_ = data_type.size;
  for (int64_t extent : chunk_shape_) chunk_nbytes_ *= static_cast<uint64_t>(extent);
  nlohmann::json config = nlohmann::json::object();
  if (data_type.size > 1) config["endian"] = endian == Endian::kBig ? "big" : "little";
  specs_.push_back({"bytes", config});
  chain_ = CodecChain::create(specs_, data_type, chunk_shape_);
  mapped_.fortran_order = fortran_order;
  if (endian == Endian::kBig && data_type.size > 1) {
    mapped_.swap_unit =
        data_type.kind == DTypeKind::kComplex ? data_type.size / 2u : data_type.size;
  }
  if (nbytes > 0) mapped_.data = file_->mapping() + offset;
  mapped_.file = file_.get();
}

ChunkLocation ContiguousSource::locate(std::span<const int64_t> coords, ReadScratch& scratch,
                                       ReadStats* stats) const {
  fail(ErrorCode::kInternal, "a mapped source was asked to locate a chunk");
}

}  // namespace chute
