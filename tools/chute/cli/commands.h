#pragma once
// The `chute` subcommands. Each register_* adds one subcommand to the app; its callback runs the
// command and throws chute::Error on failure (main prints it and exits 1).

#include <CLI/CLI.hpp>

#include "chute/store/caching_store.h"

namespace chute::cli {

/// --cache DIR and --cache-size BYTES (suffixes k, M, G, T: powers of 1024) into `cache`.
void add_cache_options(CLI::App& command, CacheOptions& cache);

/// `chute info PATH [--json]`: an array's or group's metadata, chunk and storage statistics.
void register_info(CLI::App& app);
/// `chute make-dataset KIND OUT`: writes a synthetic packed / variables / volume dataset.
void register_make_dataset(CLI::App& app);
/// `chute bench DATASET`: measures the loader on a dataset.
void register_bench(CLI::App& app);
/// `chute stats STORE --out OUT`: normalisation statistics of a weather store (Zarr group).
void register_stats(CLI::App& app);

}  // namespace chute::cli
