// The real CUDA path, on a GPU (skipped without a driver): page-locked and device memory, copies
// on chute's stream ordered before a consumer's stream by events, the Loader delivering to the
// GPU with the same batches as on the host, and the errors naming the device. Built into
// chute_tests and, alone, into chute_cuda_tests (scripts/gpu_check.sh runs it on a GPU machine).

#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "chute/device/cuda_driver.h"
#include "chute/device/device.h"
#include "chute/pipeline/loader.h"
#include "chute/pipeline/loader_test_support.h"
#include "chute/util/error_test_util.h"

namespace chute {
namespace {

using ::testing::HasSubstr;

class Cuda : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::dlopen("libcuda.so.1", RTLD_NOW) == nullptr) GTEST_SKIP() << "no CUDA driver";
    try {
      device_ = open_device("cuda:0");
    } catch (const Error& e) {
      GTEST_SKIP() << e.what();
    }
    // The test's own driver calls (read_back) run in the primary context, as a framework's do.
    const cuda::Driver& d = cuda::driver("test");
    cuda::CUdevice gpu = 0;
    cuda::CUcontext context = nullptr;
    ASSERT_EQ(d.cuDeviceGet(&gpu, 0), cuda::kSuccess);
    ASSERT_EQ(d.cuDevicePrimaryCtxRetain(&context, gpu), cuda::kSuccess);
    ASSERT_EQ(d.cuCtxSetCurrent(context), cuda::kSuccess);
  }

  // Reads device memory back with the driver's synchronous copy on the legacy default stream,
  // which does NOT wait for chute's non-blocking stream by itself: only the ordering under test
  // (an event waited for on stream 1) makes the data be there.
  std::vector<std::byte> read_back(const std::byte* device, size_t bytes) {
    const cuda::Driver& d = cuda::driver("test");
    std::vector<std::byte> out(bytes);
    EXPECT_EQ(d.cuMemcpyDtoH(out.data(), reinterpret_cast<cuda::CUdeviceptr>(device), bytes),
              cuda::kSuccess);
    return out;
  }

  DevicePtr device_;
};

TEST_F(Cuda, DeviceIsNamedAndExportsAsCuda) {
  EXPECT_EQ(device_->name(), "cuda:0");
  EXPECT_EQ(device_->place().device_type, MemoryPlace::kCuda);
}

TEST_F(Cuda, PinnedToDeviceCopyOrderedByAnEvent) {
  constexpr size_t kCudaCopyBytes = size_t{64} << 20;
  auto pinned = device_->pinned_memory();
  auto memory = device_->device_memory();
  std::byte* host = pinned->allocate(kCudaCopyBytes);
  std::byte* target = memory->allocate(kCudaCopyBytes);
  for (size_t i = 0; i < kCudaCopyBytes; ++i) host[i] = static_cast<std::byte>(i * 7 + 3);
  device_->copy_to_device(target, host, kCudaCopyBytes);
  auto event = device_->make_event();
  device_->record(*event);
  device_->wait_on_stream(1, *event);
  const std::vector<std::byte> back = read_back(target, kCudaCopyBytes);
  EXPECT_EQ(std::memcmp(back.data(), host, kCudaCopyBytes), 0);
  EXPECT_TRUE(device_->done(*event));
  memory->deallocate(target, kCudaCopyBytes);
  pinned->deallocate(host, kCudaCopyBytes);
}

TEST_F(Cuda, OutOfDeviceMemoryNamesTheDevice) {
  auto memory = device_->device_memory();
  EXPECT_THAT(testing::message_of([&] { memory->allocate(size_t{1} << 50); }, ErrorCode::kIoError),
              HasSubstr("cuda:0: out of device memory"));
}

TEST_F(Cuda, AGpuNumberTheMachineLacks) {
  EXPECT_THAT(testing::message_of([&] { open_device("cuda:999"); }, ErrorCode::kNotFound),
              HasSubstr("device 'cuda:999': this machine has"));
}

TEST_F(Cuda, LoaderDeliversTheHostLoadersBatches) {
  using namespace chute::loader_testing;  // NOLINT(build/namespaces)
  PackedFixture fixture(64);
  LoaderOptions o;
  o.batch_size = 8;
  o.threads = 4;
  o.seed = 3;
  Loader host(packed_dataset(fixture), o);
  std::vector<std::vector<std::byte>> expected;
  for (int epoch = 0; epoch < 2; ++epoch) {
    for (const Batch& batch : host) {
      for (const BatchArray& a : batch.arrays) expected.emplace_back(a.data, a.data + a.nbytes());
    }
  }
  for (bool pin : {false, true}) {
    o.device = "cuda:0";
    o.pin_memory = pin;
    Loader loader(packed_dataset(fixture), o);
    std::vector<std::vector<std::byte>> seen;
    std::vector<std::shared_ptr<std::byte>> held;
    for (int epoch = 0; epoch < 2; ++epoch) {
      for (const Batch& batch : loader) {
        for (const BatchArray& a : batch.arrays) {
          EXPECT_EQ(a.place.device_type, MemoryPlace::kCuda);
          a.ready->order_stream(1);
          seen.push_back(read_back(a.data, static_cast<size_t>(a.nbytes())));
        }
        held.push_back(batch.arrays[0].owner);  // a consumer holding two batches
        if (held.size() > 2) held.erase(held.begin());
      }
    }
    EXPECT_EQ(seen, expected) << "pin_memory " << pin;
    const LoaderStats stats = loader.stats();
    EXPECT_LE(stats.delivery->device_buffers, static_cast<int64_t>(o.prefetch) + 2 + 2 + 1);
    EXPECT_GT(stats.delivery->release_waits, 0);
  }
}

TEST_F(Cuda, PinnedHostBatchesWithoutDelivery) {
  using namespace chute::loader_testing;  // NOLINT(build/namespaces)
  PackedFixture fixture(16);
  LoaderOptions o;
  o.batch_size = 4;
  o.pin_memory = true;
  Loader loader(packed_dataset(fixture), o);
  int batches = 0;
  for (const Batch& batch : loader) {
    EXPECT_TRUE(batch.arrays[0].place.on_host());
    EXPECT_EQ(batch.arrays[0].ready, nullptr);
    ++batches;
  }
  EXPECT_EQ(batches, 4);
}

}  // namespace
}  // namespace chute
