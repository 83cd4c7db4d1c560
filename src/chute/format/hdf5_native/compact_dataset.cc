#include "chute/format/hdf5_native/compact_dataset.h"

#include <fmt/ranges.h>

#include <algorithm>

#include "chute/array/chunk_source.h"
#include "chute/format/hdf5_filters.h"
#include "chute/store/memory_store.h"
#include "chute/util/checked.h"
#include "chute/util/error.h"

namespace chute::hdf5 {
namespace {

constexpr const char* kCompactKey = "compact";

/// One chunk, the whole dataset, held in memory.
class CompactSource final : public ChunkSource {
 public:
  CompactSource(std::vector<std::byte> data, std::vector<int64_t> chunk_shape, CodecChainPtr chain)
      : store_(std::make_shared<MemoryStore>()),
        nbytes_(data.size()),
        chunk_shape_(std::move(chunk_shape)),
        chain_(std::move(chain)) {
    store_->set(kCompactKey, std::move(data));
  }

  const std::vector<int64_t>& chunk_shape() const override { return chunk_shape_; }
  const CodecChain& chain() const override { return *chain_; }
  ChunkLocation locate(std::span<const int64_t>, ReadScratch& scratch, ReadStats*) const override {
    scratch.key = kCompactKey;
    return {true, store_.get(), 0, nbytes_, chain_.get()};
  }
  std::string storage_key(std::span<const int64_t>) const override { return kCompactKey; }
  const Store& store() const override { return *store_; }
  StorePtr store_ptr() const override { return store_; }

 private:
  std::shared_ptr<MemoryStore> store_;
  uint64_t nbytes_;
  std::vector<int64_t> chunk_shape_;
  CodecChainPtr chain_;
};

}  // namespace

ArrayPtr open_compact(const h5native::Dataset& info, ArrayMetadata metadata, Endian endian,
                      const std::string& name, const std::string& where) {
  const auto item = static_cast<int64_t>(metadata.data_type.size);
  const std::optional<int64_t> nbytes = checked_product(metadata.shape, std::max<int64_t>(item, 1));
  if (!nbytes || static_cast<uint64_t>(*nbytes) != info.layout.compact.size()) {
    fail(ErrorCode::kCorruptData,
         "{}: compact data of {} bytes for a shape of [{}] elements of {} bytes", where,
         info.layout.compact.size(), fmt::join(metadata.shape, ", "), item);
  }
  metadata.chunk_shape = metadata.shape;
  for (int64_t& extent : metadata.chunk_shape) extent = std::max<int64_t>(extent, 1);
  metadata.codecs = hdf5_codec_specs({}, metadata.data_type, endian, 0, where);
  CodecChainPtr chain;
  try {
    chain = CodecChain::create(metadata.codecs, metadata.data_type, metadata.chunk_shape);
  } catch (const Error& e) {
    throw e.with_context(where);
  }
  auto source = std::make_shared<const CompactSource>(info.layout.compact, metadata.chunk_shape,
                                                      std::move(chain));
  return std::make_shared<const Array>(std::move(source), std::move(metadata), name);
}

}  // namespace chute::hdf5
