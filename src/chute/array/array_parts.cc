// Array reads that do less than a whole chunk's work: the part of a decoded chunk a task's
// boxes read, reading and decoding only that part (blosc blocks, uncompressed byte ranges),
// and one chunk decoded in parts on every worker of the pool.

#include <algorithm>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "chute/array/array.h"
#include "chute/array/chunk_grid.h"
#include "chute/array/read_plan.h"
#include "chute/array/touched_ranges.h"
#include "chute/util/clock.h"
#include "chute/util/error.h"

namespace chute {

namespace {

// fetch_and_decode for uncompressed chunks: reads only the byte ranges the task's targets touch
// (touched_ranges), with one batch of range requests, into the same bytes of `decoded`. False
// when the chunk is missing; nullopt when its stored size is not a chunk's (read it whole).
std::optional<bool> read_touched(const ChunkTask& task, const ChunkLocation& where,
                                 std::span<const int64_t> chunk_shape, int64_t item_size,
                                 const std::string& key, std::byte* decoded, ReadStats* stats) {
  const auto start = Clock::now();
  const std::optional<uint64_t> stored_nbytes =
      where.nbytes ? where.nbytes : where.store->size(key);
  const auto nbytes = static_cast<uint64_t>(where.chain->decoded_nbytes());
  if (!stored_nbytes || *stored_nbytes != nbytes) {
    if (stats) stats->read_ns += elapsed_ns(start);
    if (!stored_nbytes) return false;
    return std::nullopt;
  }
  // Per thread, reused: a crop's chunks each need a few dozen.
  thread_local std::vector<std::pair<uint64_t, uint64_t>> ranges;
  thread_local std::vector<ReadRequest> requests;
  touched_ranges(task.targets, chunk_shape, item_size, kTouchedRangeGap, ranges);
  int64_t bytes = 0;
  requests.clear();
  for (const auto& [begin, end] : ranges) {
    requests.push_back({key,
                        ByteRange::at(where.offset + begin, end - begin),
                        {decoded + begin, static_cast<size_t>(end - begin)},
                        nullptr});
    bytes += static_cast<int64_t>(end - begin);
  }
  bool found = true;
  if (requests.size() == 1) {  // no hand-off to the store's I/O threads
    found = where.store->read_range(key, requests[0].range.offset, requests[0].into);
  } else if (!requests.empty()) {
    for (const ReadOutcome& outcome : where.store->read_all(requests)) {
      if (!check_outcome(outcome)) found = false;
    }
  }
  requests.clear();
  if (!found) fail(ErrorCode::kNotFound, "the chunk disappeared while it was read");
  if (stats) {
    stats->read_ns += elapsed_ns(start);
    stats->bytes_read += bytes;
    stats->bytes_decoded += bytes;
  }
  return true;
}

}  // namespace

std::pair<size_t, size_t> Array::bytes_read_by(const ChunkTask& task) const {
  const size_t n = rank();
  int64_t strides[kMaxCopyRank];
  int64_t stride = metadata_.data_type.size;
  for (size_t d = n; d-- > 0;) {
    strides[d] = stride;
    stride *= read_chunk_shape_[d];
  }
  int64_t begin = stride;  // the chunk's size in bytes
  int64_t end = 0;
  for (const ChunkTarget& target : task.targets) {
    int64_t first = 0;
    int64_t last = 0;
    for (size_t d = 0; d < n; ++d) {
      first += target.chunk_start[d] * strides[d];
      last += (target.chunk_start[d] + target.dst.shape[d] - 1) * strides[d];
    }
    begin = std::min(begin, first);
    end = std::max(end, last + metadata_.data_type.size);
  }
  if (begin >= end) return {0, static_cast<size_t>(stride)};
  return {static_cast<size_t>(begin), static_cast<size_t>(end)};
}

bool Array::fetch_and_decode(const ChunkTask& task, ReadScratch& scratch, std::byte* decoded,
                             size_t begin, size_t end, ReadStats* stats) const {
  const ChunkLocation where = locate_timed(task, scratch, stats);
  if (!where.found) return false;
  const CodecChain& chain = *where.chain;
  const auto nbytes = static_cast<size_t>(chain.decoded_nbytes());
  if ((begin > 0 || end < nbytes) && chain.decodes_parts()) {
    if (chain.stored_as_is()) {
      // Only the rows the targets touch; a stored chunk of another size is read whole, and
      // the decode says what is wrong with it.
      const std::optional<bool> found = read_touched(
          task, where, read_chunk_shape_, metadata_.data_type.size, scratch.key, decoded, stats);
      if (found) return *found;
      return read_part(where, scratch, decoded, 0, nbytes, stats);
    }
    return read_part(where, scratch, decoded, begin, end, stats);
  }
  if (!read_located(where, scratch, stats)) return false;
  decode_timed(chain, scratch, decoded, begin, end, stats);
  return true;
}

bool Array::read_part(const ChunkLocation& where, ReadScratch& scratch, std::byte* decoded,
                      size_t begin, size_t end, ReadStats* stats) const {
  const auto start = Clock::now();
  const std::optional<uint64_t> stored_nbytes =
      where.nbytes ? where.nbytes : where.store->size(scratch.key);
  int64_t read_ns = elapsed_ns(start);
  int64_t bytes_read = 0;
  const StreamReader read = [&](uint64_t offset, std::span<std::byte> into) {
    const auto read_start = Clock::now();
    if (!where.store->read_range(scratch.key, where.offset + offset, into)) {
      fail(ErrorCode::kNotFound, "the chunk disappeared while it was read");
    }
    read_ns += elapsed_ns(read_start);
    bytes_read += static_cast<int64_t>(into.size());
  };
  const CodecChain& chain = *where.chain;
  const auto nbytes = static_cast<size_t>(chain.decoded_nbytes());
  const bool part =
      stored_nbytes && chain.read_part(read, static_cast<size_t>(*stored_nbytes), begin, end,
                                       scratch.encoded, {decoded, nbytes}, scratch.codec);
  if (stats) {
    stats->read_ns += read_ns;
    stats->bytes_read += bytes_read;
    if (stored_nbytes) {
      stats->decode_ns += elapsed_ns(start) - read_ns;
      stats->bytes_decoded += static_cast<int64_t>(
          part ? chain.part_decoded_nbytes(scratch.encoded.span(), begin, end) : nbytes);
    }
  }
  return stored_nbytes.has_value();
}

void Array::decode_split(const CodecChain& chain, std::vector<ReadScratch>& scratch,
                         std::byte* decoded, size_t begin, size_t end, ThreadPool& pool,
                         ReadStats* stats) const {
  const std::span<const std::byte> encoded = scratch[0].encoded.span();
  const auto nbytes = static_cast<size_t>(chain.decoded_nbytes());
  const size_t align = chain.part_alignment(encoded);
  const size_t first = align ? begin / align : 0;
  const size_t blocks = align ? (end - 1) / align - first + 1 : 1;
  // Below kSplitMinBytes the pool's hand-off costs more than a second thread saves.
  const size_t parts = end - begin < kSplitMinBytes ? 1 : std::min(pool.size(), blocks);
  if (parts < 2) {
    decode_timed(chain, scratch[0], decoded, begin, end, stats);
    return;
  }
  pool.parallel_for(parts, [&](size_t i, size_t worker) {
    const size_t lo = std::max(begin, (first + blocks * i / parts) * align);
    const size_t hi = std::min(end, (first + blocks * (i + 1) / parts) * align);
    const auto start = Clock::now();
    chain.decode_part(encoded, lo, hi, {decoded, nbytes}, scratch[worker].codec);
    if (stats) stats->decode_ns += elapsed_ns(start);
  });
  if (stats) stats->bytes_decoded += static_cast<int64_t>(end - begin);
}

}  // namespace chute
