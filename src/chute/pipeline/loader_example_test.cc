// The C++ example of docs/frameworks/cpp.md (also at the top of chute/pipeline/loader.h), compiled
// and run on a small W1 dataset written to a temporary folder.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <numeric>
#include <vector>

#include "chute/loader.h"
#include "chute/synth/zarr_writer.h"

namespace chute {
namespace {

namespace fs = std::filesystem;

// Writes train/inputs.zarr (32, 6, 8, 5) and train/targets.zarr (32, 6, 8, 2), blosc-lz4.
fs::path write_example_dataset() {
  const fs::path root =
      fs::temp_directory_path() / ("chute_loader_example_" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "train");
  for (auto [name, channels] : {std::pair{"inputs", 5}, {"targets", 2}}) {
    synth::ArraySpec spec;
    spec.shape = {32, 6, 8, channels};
    spec.chunk_shape = {1, 6, 8, channels};
    spec.codec = "blosc-lz4";
    synth::ArrayWriter writer((root / "train" / (std::string(name) + ".zarr")).string(), spec);
    std::vector<float> values(static_cast<size_t>(32 * 6 * 8 * channels));
    std::iota(values.begin(), values.end(), 0.0f);
    writer.write_all(std::as_bytes(std::span(values)));
  }
  return root;
}

void use(const float*, const std::vector<int64_t>&) {}

TEST(LoaderExample, ReadmeExampleRuns) {
  const fs::path root = write_example_dataset();
  const std::string train = (root / "train").string();

  // --- the example ---
  auto dataset = chute::open_packed_dataset(
      {{"inputs", train + "/inputs.zarr"}, {"targets", train + "/targets.zarr"}});
  chute::LoaderOptions options;
  options.batch_size = 16;
  options.shuffle = true;
  options.seed = 0;
  options.drop_last = true;
  options.prefetch = 2;
  chute::Loader loader(dataset, options);
  int64_t batches = 0;
  for (int epoch = 0; epoch < 2; ++epoch) {
    for (const chute::Batch& batch : loader) {
      const chute::BatchArray& x = batch["inputs"];
      const float* values = x.as<float>();
      use(values, batch.indices);
      // --- checks ---
      EXPECT_EQ(x.shape, (std::vector<int64_t>{16, 6, 8, 5}));
      for (int64_t slot = 0; slot < 16; ++slot) {
        const int64_t sample = batch.indices[static_cast<size_t>(slot)];
        EXPECT_EQ(values[slot * 240], static_cast<float>(sample * 240));
        EXPECT_EQ(batch["targets"].as<float>()[slot * 96 + 95],
                  static_cast<float>(sample * 96 + 95));
      }
      ++batches;
    }
  }
  EXPECT_EQ(batches, 4);
  const chute::SamplerState saved = loader.state();
  EXPECT_EQ(saved.epoch, 2);  // epoch 1 is done: a resume starts epoch 2 at its first batch
  EXPECT_EQ(saved.next_batch, 0);
  fs::remove_all(root);
}

}  // namespace
}  // namespace chute
