#pragma once
// make-dataset's HDF5 form of the volume: one file holding float32 datasets (`Nbody`, `Hydro`),
// contiguous (laid out first, then filled with pwrite in parallel, as fast as the .npy form) or
// chunked (chunks generated and encoded on the pool with the HDF5 filter pipeline of the codec
// preset, appended as they are done), written by chute's own writer (hdf5_file_writer.h).

#include <string>
#include <vector>

#include "chute/synth/generate.h"

namespace chute::synth {

struct Hdf5DatasetJob {
  std::string name;    // dataset path in the file
  const Field* field;  // its values and shape
};

/// Writes the datasets into a new file `path`. `chunk` 0: contiguous; else chunks
/// (1, chunk, chunk, ...) filtered as codec preset `codec` ("none", "blosc-lz4", "blosc-zstd",
/// "zstd", "gzip") maps onto HDF5 filters (blosc 32001, zstd 32015, shuffle + deflate).
GenerateResult write_hdf5(const std::string& path, const std::vector<Hdf5DatasetJob>& jobs,
                          int64_t chunk, const std::string& codec, ThreadPool& pool,
                          ProgressTracker* progress);

}  // namespace chute::synth
