// A rank that cannot open its data must not leave the others waiting: every rank fails with the
// same error naming the rank that failed.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "chute/dist/all_ranks.h"
#include "chute/dist/mpi_test_support.h"
#include "chute/format/open.h"
#include "chute/util/error.h"

namespace chute::dist {
namespace {

namespace fs = std::filesystem;
using testing::world;

// Rank 0 writes a tiny uncompressed Zarr v2 array and tells every rank where it is.
std::string shared_tiny_array() {
  std::string folder;
  if (world().rank() == 0) {
    std::string pattern = (fs::temp_directory_path() / "chute-mpi-XXXXXX").string();
    folder = mkdtemp(pattern.data());
    fs::create_directories(folder + "/tiny.zarr");
    std::ofstream(folder + "/tiny.zarr/.zarray")
        << R"({"zarr_format": 2, "shape": [4], "chunks": [4], "dtype": "<i4", "order": "C",
              "compressor": null, "filters": null, "fill_value": 0})";
    const int32_t values[4] = {1, 2, 3, 4};
    std::ofstream(folder + "/tiny.zarr/0", std::ios::binary)
        .write(reinterpret_cast<const char*>(values), sizeof(values));
  }
  return world().broadcast_from_root(folder);
}

TEST(MpiOpen, ARankThatCannotOpenItsDataFailsEveryRankWithItsName) {
  const std::string folder = shared_tiny_array();
  const int failing = world().size() - 1;
  const std::string path =
      folder + (world().rank() == failing ? "/no-such-array.zarr" : "/tiny.zarr");
  std::string message;
  ErrorCode code = ErrorCode::kInternal;
  try {
    run_on_all_ranks(world(), "opening the dataset", [&] {
      ArrayPtr array = open_array(path);
      EXPECT_EQ(array->metadata().shape, std::vector<int64_t>{4});
    });
  } catch (const Error& error) {
    code = error.code();
    message = error.what();
  }
  EXPECT_EQ(code, ErrorCode::kNotFound) << message;
  EXPECT_NE(message.find("opening the dataset failed on rank " + std::to_string(failing) + " of " +
                         std::to_string(world().size())),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("no-such-array.zarr"), std::string::npos) << message;

  // Everybody can open it: no error anywhere, and the ranks go on to the next collective.
  EXPECT_NO_THROW(
      run_on_all_ranks(world(), "opening the dataset", [&] { open_array(folder + "/tiny.zarr"); }));
  world().barrier();
  if (world().rank() == 0) fs::remove_all(folder);
}

}  // namespace
}  // namespace chute::dist
