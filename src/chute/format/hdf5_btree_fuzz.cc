// libFuzzer target: treats arbitrary bytes as an HDF5 file whose dataset object header starts at
// byte 0 (a version 1 or 2 header, then a layout message and a chunk B-tree anywhere in the
// file), checks its layout message as chute does before libhdf5 sees it, and reads its chunk
// index with chute's own B-tree reader. Any input must either give a table of chunks inside the
// grid (duplicates are caught by Hdf5ChunkedSource, not here) or throw chute::Error.

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "chute/codec/codec_chain.h"
#include "chute/format/hdf5_btree.h"
#include "chute/util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/chute_hdf5_btree_fuzz_" + std::to_string(getpid());
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  const std::vector<int64_t> grid = {3, 4}, chunk = {2, 5};
  std::vector<chute::Hdf5ChunkEntry> entries;
  try {
    chute::SingleFileStore file(path);
    chute::hdf5::check_layout_message(file, 0, {8, 8}, "fuzz.h5");
  } catch (const chute::Error&) {
  }
  try {
    chute::SingleFileStore file(path);
    chute::hdf5::read_btree_chunk_index(file, 0, {8, 8}, grid, chunk, entries, "fuzz.h5");
    if (entries.size() > size) __builtin_trap();
    for (auto& e : entries) {
      if (e.chunk < 0 || e.chunk >= 12) __builtin_trap();
      e.chain = 0;
    }
    // The table the reader builds: sorted, duplicates and chunks past the file refused.
    static const auto chain =
        chute::CodecChain::create(std::vector<chute::CodecSpec>{{"bytes", {{"endian", "little"}}}},
                                  chute::DataType{chute::DTypeKind::kInt, 4}, chunk);
    const chute::Hdf5ChunkedSource source(std::make_shared<const chute::SingleFileStore>(path),
                                          chunk, grid, {chain}, std::move(entries), "fuzz.h5");
    if (source.stored_chunks() > 12) __builtin_trap();
  } catch (const chute::Error&) {
  }
  return 0;
}
