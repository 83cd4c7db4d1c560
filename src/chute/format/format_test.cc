// The format seam: which format recognises a path (a .npy magic without the extension, an HDF5
// signature after a user block, a path inside an HDF5 file, Zarr for the rest), and the format
// each opened array and group names.
#include "chute/format/format.h"

#include <gtest/gtest.h>
#include <hdf5.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "chute/array/chunk_source.h"
#include "chute/format/open.h"
#include "chute/format/sniff.h"

namespace chute {
namespace {

namespace fs = std::filesystem;

class FormatSeam : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("chute_format_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "z");
    std::ofstream(root_ / "z" / ".zarray")
        << R"({"zarr_format":2,"shape":[4],"chunks":[2],"dtype":"<f4","compressor":null,)"
           R"("fill_value":0,"filters":null,"order":"C"})";
  }
  void TearDown() override { fs::remove_all(root_); }

  // An HDF5 file with group "g" holding int32 dataset "x" = {1, 2, 3}, after a user block of
  // `user_block` bytes (0: none).
  std::string write_hdf5(const std::string& name, hsize_t user_block) {
    const std::string path = (root_ / name).string();
    const hid_t fcpl = H5Pcreate(H5P_FILE_CREATE);
    if (user_block) H5Pset_userblock(fcpl, user_block);
    const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, fcpl, H5P_DEFAULT);
    const hid_t group = H5Gcreate2(file, "g", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    const hsize_t dims[1] = {3};
    const hid_t space = H5Screate_simple(1, dims, nullptr);
    const hid_t dset =
        H5Dcreate2(group, "x", H5T_STD_I32LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    const int values[3] = {1, 2, 3};
    H5Dwrite(dset, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values);
    H5Dclose(dset);
    H5Sclose(space);
    H5Gclose(group);
    H5Fclose(file);
    H5Pclose(fcpl);
    return path;
  }

  std::string write_npy(const std::string& name) {
    // v1: magic, version 1.0, header length (uint16), the dict padded with spaces and a
    // newline to a multiple of 64 bytes in all.
    std::string header = "{'descr': '<i2', 'fortran_order': False, 'shape': (2,), }";
    const size_t total = 10 + header.size() + 1;
    header.append((total + 63) / 64 * 64 - total, ' ');
    header += '\n';
    std::string bytes = std::string("\x93NUMPY\x01\x00", 8);
    bytes += static_cast<char>(header.size() & 0xff);
    bytes += static_cast<char>(header.size() >> 8);
    bytes += header;
    const int16_t values[2] = {7, -7};
    bytes.append(reinterpret_cast<const char*>(values), sizeof values);
    const std::string path = (root_ / name).string();
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }

  std::string format_of(const std::string& path) {
    return std::string(find_format(path).first->name());
  }

  fs::path root_;
};

TEST_F(FormatSeam, EachFormatRecognisesItsOwn) {
  const std::string h5 = write_hdf5("a.h5", 0);
  const std::string nc = write_hdf5("b.nc", 0);
  const std::string npy = write_npy("c.npy");
  const std::string npy_no_extension = write_npy("c.bin");
  EXPECT_EQ(format_of(h5), "hdf5");
  EXPECT_EQ(format_of(nc + "/g/x"), "hdf5");
  EXPECT_EQ(format_of(npy), "npy");
  EXPECT_EQ(format_of(npy_no_extension), "npy");
  EXPECT_EQ(format_of((root_ / "z").string()), "zarr");
  EXPECT_EQ(format_of((root_ / "missing").string()), "zarr");
  EXPECT_EQ(format_of("https://example.com/data.zarr"), "zarr");
  EXPECT_EQ(format_of("https://example.com/era5.nc/t2m"), "hdf5");
  EXPECT_EQ(format_name(nc + "/g/x/"), "hdf5");

  const auto [format, match] = find_format(nc + "/g/x");
  EXPECT_EQ(match.container, nc);
  EXPECT_EQ(match.member, "g/x");
}

TEST_F(FormatSeam, AnHdf5SignatureAfterAUserBlockIsRecognisedAndOpens) {
  const std::string path = write_hdf5("ub.h5", 1024);
  EXPECT_FALSE(read_file_bytes(path, 0, 4) == std::string("\x89HDF", 4));
  EXPECT_EQ(format_of(path + "/g/x"), "hdf5");
  ArrayPtr array = open_array(path + "/g/x");
  std::vector<int32_t> out(3);
  array->read(std::vector<int64_t>{0},
              StridedView::contiguous(reinterpret_cast<std::byte*>(out.data()), {3}, 4));
  EXPECT_EQ(out, (std::vector<int32_t>{1, 2, 3}));
}

TEST_F(FormatSeam, OpenedArraysAndGroupsNameTheirFormat) {
  const std::string h5 = write_hdf5("a.h5", 0);
  EXPECT_EQ(open_array(h5 + "/g/x")->metadata().format, "hdf5");
  EXPECT_EQ(open_array(h5 + "/g/x")->metadata().zarr_format, 0);
  EXPECT_EQ(open_array(write_npy("c.npy"))->metadata().format, "npy");
  EXPECT_EQ(open_array((root_ / "z").string())->metadata().format, "zarr");
  const Group group = open_group(h5);
  EXPECT_EQ(group.format, "hdf5");
  EXPECT_EQ(group.zarr_format, 0);
  EXPECT_EQ(group.arrays.count("g/x"), 1u);
}

TEST_F(FormatSeam, IsGroupAsksTheFormat) {
  const std::string h5 = write_hdf5("a.h5", 0);
  EXPECT_TRUE(is_group(h5));
  EXPECT_TRUE(is_group(h5 + "/g"));
  EXPECT_FALSE(is_group(h5 + "/g/x"));
  EXPECT_FALSE(is_group(h5 + "/nothing"));
  EXPECT_FALSE(is_group(write_npy("c.npy")));
  EXPECT_FALSE(is_group((root_ / "z").string()));
}

TEST_F(FormatSeam, AStoredSizeIsAskedOfTheChunkSource) {
  const std::string h5 = write_hdf5("a.h5", 0);
  ArrayPtr array = open_array(h5 + "/g/x");  // contiguous: one slab of 12 bytes
  EXPECT_EQ(array->source().stored_nbytes(std::vector<int64_t>{0}), 12u);
  ArrayPtr zarr = open_array((root_ / "z").string());
  EXPECT_FALSE(zarr->source().stored_nbytes(std::vector<int64_t>{0}).has_value());
}

}  // namespace
}  // namespace chute
