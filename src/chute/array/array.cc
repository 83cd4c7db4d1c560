#include "chute/array/array.h"

#include <fmt/ranges.h>

#include <optional>
#include <tuple>

#include "chute/array/array_join.h"
#include "chute/array/chunk_grid.h"
#include "chute/array/read_plan.h"
#include "chute/array/strided_copy.h"
#include "chute/array/zarr_chunk_source.h"
#include "chute/util/checked.h"
#include "chute/util/clock.h"
#include "chute/util/element_count.h"
#include "chute/util/error.h"

namespace chute {
namespace {

std::string describe_box(std::span<const int64_t> start, std::span<const int64_t> shape) {
  std::string box = "[";
  for (size_t d = 0; d < start.size(); ++d) {
    box += fmt::format("{}{}:{}", d ? ", " : "", start[d], start[d] + shape[d]);
  }
  return box + "]";
}

}  // namespace

void ReadStats::reset() {
  read_ns = 0;
  decode_ns = 0;
  assemble_ns = 0;
  bytes_read = 0;
  bytes_decoded = 0;
  chunks = 0;
  missing_chunks = 0;
  chunks_in_flight = 0;
}

const Store& Array::store() const { return source_->store(); }

const CodecChain& Array::codecs() const { return codecs_ ? *codecs_ : source_->chain(); }

Array::Array(StorePtr store, std::string prefix, ArrayMetadata metadata, std::string name)
    : metadata_(std::move(metadata)), name_(std::move(name)) {
  validate_metadata();
  const auto& chunks = metadata_.chunk_shape;
  try {
    codecs_ =
        CodecChain::create(metadata_.codecs, metadata_.data_type, chunks, metadata_.fill_value);
  } catch (const Error& e) {
    throw e.with_context(fmt::format("array '{}'", name_));
  }
  if (codecs_->sharding() != nullptr) {
    source_ = std::make_shared<ShardedZarrChunkSource>(std::move(store), std::move(prefix),
                                                       metadata_.chunk_key_encoding,
                                                       metadata_.shape, chunks, codecs_, name_);
  } else {
    source_ = std::make_shared<ZarrChunkSource>(std::move(store), std::move(prefix),
                                                metadata_.chunk_key_encoding, chunks, codecs_);
  }
  init_read_grid();
}

Array::Array(ChunkSourcePtr source, ArrayMetadata metadata, std::string name)
    : source_(std::move(source)), metadata_(std::move(metadata)), name_(std::move(name)) {
  validate_metadata();
  init_read_grid();
}

Array::Array(std::shared_ptr<const ArrayJoin> join, ArrayMetadata metadata, std::string name)
    : join_(std::move(join)), metadata_(std::move(metadata)), name_(std::move(name)) {
  validate_metadata();
  // The read grid of the first member (its slice axis dropped): what a member's chunks are
  // like, for callers sizing work; reads themselves go to the members.
  const Array& first = join_->parent ? *join_->parent : *join_->members.at(0);
  source_ = first.source_;
  read_chain_ = first.read_chain_;
  read_chunk_shape_ = first.read_chunk_shape_;
  if (join_->parent) read_chunk_shape_.erase(read_chunk_shape_.begin() + join_->axis);
  if (join_->mapped) read_chunk_shape_ = metadata_.chunk_shape;  // sources may differ in rank
  read_grid_shape_ = chunk_grid_shape(metadata_.shape, read_chunk_shape_);
}

void Array::validate_metadata() {
  const auto& shape = metadata_.shape;
  const auto& chunks = metadata_.chunk_shape;
  if (chunks.size() != shape.size()) {
    fail(ErrorCode::kInvalidMetadata,
         "array '{}': expected a chunk shape of rank {} like shape [{}], found [{}]", name_,
         shape.size(), fmt::join(shape, ", "), fmt::join(chunks, ", "));
  }
  if (shape.size() > kMaxCopyRank) {
    fail(ErrorCode::kUnsupported, "array '{}': rank {} exceeds the supported maximum of {}", name_,
         shape.size(), kMaxCopyRank);
  }
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] < 0 || chunks[d] <= 0) {
      fail(ErrorCode::kInvalidMetadata,
           "array '{}': expected shape >= 0 and chunk shape > 0, found shape [{}], chunks [{}]",
           name_, fmt::join(shape, ", "), fmt::join(chunks, ", "));
    }
  }
  const size_t item_size = metadata_.data_type.size;
  const auto item = std::max<int64_t>(static_cast<int64_t>(item_size), 1);
  for (auto [what, extents] : {std::pair{"shape", std::span<const int64_t>(shape)},
                               std::pair{"chunk shape", std::span<const int64_t>(chunks)}}) {
    if (!checked_product(extents, item)) {
      fail(ErrorCode::kInvalidMetadata,
           "array '{}': a {} of [{}] elements of {} bytes holds more than 2^63 bytes: it cannot "
           "be indexed",
           name_, what, fmt::join(extents, ", "), item_size);
    }
  }
  if (metadata_.fill_value.empty()) metadata_.fill_value.assign(item_size, std::byte{0});
  if (metadata_.fill_value.size() != item_size) {
    fail(ErrorCode::kInvalidMetadata, "array '{}': expected a fill value of {} bytes, found {}",
         name_, item_size, metadata_.fill_value.size());
  }
}

void Array::init_read_grid() {
  const auto& shape = metadata_.shape;
  read_chunk_shape_ = source_->chunk_shape();
  read_chain_ = &source_->chain();
  if (read_chunk_shape_.size() != shape.size()) {
    fail(ErrorCode::kInternal, "array '{}': a read grid of rank {} for an array of rank {}", name_,
         read_chunk_shape_.size(), shape.size());
  }
  read_grid_shape_ = chunk_grid_shape(shape, read_chunk_shape_);
  if (!chunk_count(read_grid_shape_) ||
      !checked_product(read_chunk_shape_,
                       std::max<int64_t>(static_cast<int64_t>(metadata_.data_type.size), 1))) {
    fail(ErrorCode::kInvalidMetadata,
         "array '{}': a grid of [{}] chunks of [{}] elements cannot be indexed (more than 2^63 "
         "chunks or bytes)",
         name_, fmt::join(read_grid_shape_, ", "), fmt::join(read_chunk_shape_, ", "));
  }
  const int64_t expected =
      element_count(read_chunk_shape_) * static_cast<int64_t>(metadata_.data_type.size);
  if (read_chain_->decoded_nbytes() != expected) {
    fail(ErrorCode::kInternal, "array '{}': codec chain decodes {} bytes per chunk, expected {}",
         name_, read_chain_->decoded_nbytes(), expected);
  }
}

std::string Array::storage_key(std::span<const int64_t> chunk_coords) const {
  return source_->storage_key(chunk_coords);
}

void Array::check_box(std::span<const int64_t> start, std::span<const int64_t> shape) const {
  const size_t n = rank();
  if (start.size() != n || shape.size() != n) {
    fail(ErrorCode::kInvalidArgument,
         "array '{}': expected a box of rank {}, found a start of rank {} and a shape of rank {}",
         name_, n, start.size(), shape.size());
  }
  const auto& extent = metadata_.shape;
  for (size_t d = 0; d < n; ++d) {
    if (start[d] < 0 || shape[d] < 0 || start[d] > extent[d] - shape[d]) {
      fail(ErrorCode::kOutOfRange, "array '{}': box {} is outside the array's shape [{}]", name_,
           describe_box(start, shape), fmt::join(extent, ", "));
    }
  }
}

void Array::read(std::span<const int64_t> start, const StridedView& dst, ThreadPool* pool,
                 ReadStats* stats) const {
  ReadPlan plan;
  plan.add(*this, start, dst);
  thread_local std::vector<ReadScratch> scratch;
  plan.execute(pool, scratch, stats);
}

void Array::read_converted(std::span<const int64_t> start, const StridedView& dst,
                           const ElementConvert& convert, ThreadPool* pool,
                           ReadStats* stats) const {
  check_convert(convert, name_);
  ReadPlan plan;
  plan.add(*this, start, dst, {}, &convert);
  thread_local std::vector<ReadScratch> scratch;
  plan.execute(pool, scratch, stats);
}

int64_t Array::read_chunk_nbytes() const { return read_chain_->decoded_nbytes(); }

template <typename Body>
void Array::with_chunk_context(const ChunkTask& task, ReadScratch& scratch, Body&& body) const {
  scratch.key.clear();
  try {
    if (task.chunk_coords.size() != rank()) {
      fail(ErrorCode::kInternal, "expected chunk coordinates of rank {}, found {}", rank(),
           task.chunk_coords.size());
    }
    body();
  } catch (const std::exception& e) {
    std::string where = fmt::format("array '{}', chunk '{}'{}", name_, scratch.key,
                                    source_->describe_chunk(task.chunk_coords));
    if (!task.context.empty()) where += ", " + task.context;
    if (const auto* error = dynamic_cast<const Error*>(&e)) throw error->with_context(where);
    throw Error(ErrorCode::kInternal, where + ": " + e.what());
  }
}

ChunkLocation Array::locate_timed(const ChunkTask& task, ReadScratch& scratch,
                                  ReadStats* stats) const {
  const auto start = Clock::now();
  ChunkLocation where = source_->locate(task.chunk_coords, scratch, stats);
  if (stats) {
    stats->read_ns += elapsed_ns(start);
    stats->chunks += 1;
  }
  return where;
}

bool Array::read_located(const ChunkLocation& where, ReadScratch& scratch, ReadStats* stats) const {
  const auto start = Clock::now();
  bool found = false;
  if (where.nbytes) {
    scratch.encoded.resize_for_overwrite(static_cast<size_t>(*where.nbytes));
    found = where.store->read_range(scratch.key, where.offset, scratch.encoded.span());
  } else {
    found = where.store->read(scratch.key, scratch.encoded);
  }
  if (stats) {
    stats->read_ns += elapsed_ns(start);
    if (found) stats->bytes_read += static_cast<int64_t>(scratch.encoded.size());
  }
  return found;
}

template <typename Fetch>
void Array::execute_with(const ChunkTask& task, ReadScratch& scratch, ReadStats* stats,
                         Fetch&& fetch) const {
  with_chunk_context(task, scratch, [&] {
    const auto nbytes = static_cast<size_t>(read_chain_->decoded_nbytes());
    const int64_t item_size = metadata_.data_type.size;
    // A target covering the whole chunk with a C-contiguous layout takes the decoded bytes
    // directly; the other targets (duplicates from other samples) are copied from it.
    const ChunkTarget* direct = nullptr;
    for (const ChunkTarget& target : task.targets) {
      if (target.convert == nullptr && target.dst.shape == read_chunk_shape_ &&
          target.dst.is_contiguous(item_size)) {
        direct = &target;
        break;
      }
    }
    std::byte* decoded = direct ? direct->dst.data : nullptr;
    size_t begin = 0;
    size_t end = nbytes;
    if (!direct) {
      scratch.staging.resize_for_overwrite(nbytes);
      decoded = scratch.staging.data();
      std::tie(begin, end) = bytes_read_by(task);
    }
    const bool found = fetch(decoded, begin, end);
    const auto start = Clock::now();
    if (!found) {
      fill_targets(task);
    } else {
      for (const ChunkTarget& target : task.targets) {
        if (&target == direct) continue;
        place_target(decoded, read_chunk_shape_, target, item_size);
      }
    }
    if (stats) {
      stats->missing_chunks += found ? 0 : 1;
      stats->assemble_ns += elapsed_ns(start);
    }
  });
}

void Array::execute(const ChunkTask& task, ReadScratch& scratch, ReadStats* stats) const {
  execute(task, scratch, stats, nullptr);
}

void Array::execute(const ChunkTask& task, ReadScratch& scratch, ReadStats* stats,
                    FetchedChunk* fetched) const {
  if (fetched != nullptr) {
    execute_with(task, scratch, stats, [&](std::byte* decoded, size_t begin, size_t end) {
      return decode_fetched(*fetched, scratch, decoded, begin, end, stats);
    });
    return;
  }
  if (source_->mapped()) {
    with_chunk_context(task, scratch, [&] { copy_mapped(task, scratch, stats); });
    return;
  }
  execute_with(task, scratch, stats, [&](std::byte* decoded, size_t begin, size_t end) {
    return fetch_and_decode(task, scratch, decoded, begin, end, stats);
  });
}

void Array::execute_parallel(const ChunkTask& task, ThreadPool& pool,
                             std::vector<ReadScratch>& scratch, ReadStats* stats) const {
  if (scratch.size() < pool.size()) scratch.resize(pool.size());
  ReadScratch& own = scratch[0];  // the caller's: its codec state stays with worker 0
  if (source_->mapped()) {
    execute(task, own, stats);
    return;
  }
  execute_with(task, own, stats, [&](std::byte* decoded, size_t begin, size_t end) {
    const auto nbytes = static_cast<size_t>(read_chain_->decoded_nbytes());
    if (end - begin < nbytes / 2) {  // a crop: read and decode only its blocks
      return fetch_and_decode(task, own, decoded, begin, end, stats);
    }
    const ChunkLocation where = locate_timed(task, own, stats);
    if (!where.found || !read_located(where, own, stats)) return false;
    decode_split(*where.chain, scratch, decoded, begin, end, pool, stats);
    return true;
  });
}

void Array::load(const ChunkTask& task, ReadScratch& scratch, std::byte* decoded, ReadStats* stats,
                 FetchedChunk* fetched) const {
  with_chunk_context(task, scratch, [&] {
    if (source_->mapped()) {  // ReadPlan's tasks of mapped sources are boxes, not chunks
      fail(ErrorCode::kInternal, "a mapped source's box was asked to load a chunk");
    }
    const auto [begin, end] = bytes_read_by(task);
    if (fetched != nullptr ? decode_fetched(*fetched, scratch, decoded, begin, end, stats)
                           : fetch_and_decode(task, scratch, decoded, begin, end, stats)) {
      return;
    }
    const auto start = Clock::now();
    strided_fill(StridedView::contiguous(decoded, read_chunk_shape_, metadata_.data_type.size),
                 metadata_.fill_value);
    if (stats) {
      stats->missing_chunks += 1;
      stats->assemble_ns += elapsed_ns(start);
    }
  });
}

bool Array::plan_fetch(const ChunkTask& task, ReadScratch& scratch, ReadStats* stats,
                       FetchedChunk& out) const {
  if (source_->mapped()) return false;
  bool fetch = false;
  with_chunk_context(task, scratch, [&] {
    // A target covering the whole chunk makes bytes_read_by() the whole chunk too.
    const auto [begin, end] = bytes_read_by(task);
    const auto start = Clock::now();
    const ChunkLocation where = source_->locate(task.chunk_coords, scratch, stats);
    const auto nbytes = static_cast<size_t>(read_chain_->decoded_nbytes());
    if (where.found && (begin > 0 || end < nbytes) && where.chain->decodes_parts()) return;
    out.where = where;
    out.key = scratch.key;
    out.outcome = {};
    fetch = true;
    if (stats) {
      stats->read_ns += elapsed_ns(start);
      stats->chunks += 1;
    }
  });
  return fetch;
}

bool Array::decode_fetched(FetchedChunk& fetched, ReadScratch& scratch, std::byte* decoded,
                           size_t begin, size_t end, ReadStats* stats) const {
  scratch.key = fetched.key;  // errors name the chunk
  if (!fetched.where.found || !check_outcome(fetched.outcome)) return false;
  std::swap(scratch.encoded, fetched.bytes);
  if (stats) stats->bytes_read += static_cast<int64_t>(scratch.encoded.size());
  decode_timed(*fetched.where.chain, scratch, decoded, begin, end, stats);
  return true;
}

void Array::decode_timed(const CodecChain& chain, ReadScratch& scratch, std::byte* decoded,
                         size_t begin, size_t end, ReadStats* stats) const {
  const auto nbytes = static_cast<size_t>(chain.decoded_nbytes());
  const auto start = Clock::now();
  bool part = false;
  if (begin == 0 && end == nbytes) {
    chain.decode(scratch.encoded.span(), {decoded, nbytes}, scratch.codec);
  } else {
    part = chain.decode_part(scratch.encoded.span(), begin, end, {decoded, nbytes}, scratch.codec);
  }
  if (stats) {
    stats->decode_ns += elapsed_ns(start);
    stats->bytes_decoded += static_cast<int64_t>(
        part ? chain.part_decoded_nbytes(scratch.encoded.span(), begin, end) : nbytes);
  }
}

void Array::fill_targets(const ChunkTask& task) const {
  for (const ChunkTarget& target : task.targets) fill_target(target, metadata_.fill_value);
}

}  // namespace chute
