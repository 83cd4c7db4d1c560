#pragma once
// Per-worker state and counters of the read engine, shared by Array, ReadPlan and the chunk
// sources (which keep a chunk's key and a shard's index in the worker's scratch).

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "chute/array/strided_copy.h"
#include "chute/codec/codec_chain.h"
#include "chute/codec/sharding.h"
#include "chute/util/byte_buffer.h"

namespace chute {

/// Time and bytes spent in reads, for the benchmark's breakdown. Summed over workers.
struct ReadStats {
  std::atomic<int64_t> read_ns{0};      // waiting for the store
  std::atomic<int64_t> decode_ns{0};    // running the codec chain
  std::atomic<int64_t> assemble_ns{0};  // copying staged chunks and filling missing ones
  std::atomic<int64_t> bytes_read{0};   // encoded bytes from the store
  std::atomic<int64_t> bytes_decoded{0};
  std::atomic<int64_t> chunks{0};
  std::atomic<int64_t> missing_chunks{0};
  /// Of `chunks`, those whose reads the engine submitted ahead of decoding (read whole, in
  /// flight beside the workers); the rest were read by the worker that decoded them.
  std::atomic<int64_t> chunks_in_flight{0};
  void reset();
};

/// Per-worker reusable state for executing chunk reads.
struct ReadScratch {
  ByteBuffer encoded;
  ByteBuffer staging;
  ByteBuffer gather;  // the decoded chunks of one gather group, side by side
  CodecScratch codec;
  std::vector<ShardIndexEntry> shard_index;
  std::string key;                   // storage key of the chunk being read, reused across chunks
  std::vector<InterleavedRun> runs;  // the gather group being placed
};

}  // namespace chute
