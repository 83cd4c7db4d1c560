// Device names, the stand-in device's deferred copies and its errors, and what a machine without
// a CUDA driver says when a GPU is asked for.

#include "chute/device/device.h"

#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "chute/codec/codec_test_util.h"
#include "chute/device/standin_device.h"
#include "chute/util/error.h"

namespace chute {
namespace {

bool device_test_has_cuda_driver() {
  void* library = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (library == nullptr) library = ::dlopen("libcuda.so.1", RTLD_NOW);
  return library != nullptr;
}

TEST(OpenDevice, RejectsMalformedNames) {
  for (const char* bad : {"cuda:", "cuda:x", "cuda:-1", "cuda:0x", "cuda:1:2"}) {
    SCOPED_TRACE(bad);
    EXPECT_CHUTE_ERROR(open_device(bad), ErrorCode::kInvalidArgument, "cuda:N");
  }
  EXPECT_CHUTE_ERROR(open_device("tpu:0"), ErrorCode::kInvalidArgument,
                     "unknown device kind 'tpu'");
  EXPECT_CHUTE_ERROR(open_device(""), ErrorCode::kInvalidArgument, "unknown device kind");
}

TEST(OpenDevice, StandInIsNamedByItsNumber) {
  DevicePtr device = open_device("standin:3");
  EXPECT_EQ(device->name(), "standin:3");
  EXPECT_TRUE(device->place().on_host());
  EXPECT_EQ(open_device("standin")->name(), "standin:0");
}

TEST(OpenDevice, CudaWithoutADriverIsAClearError) {
  if (device_test_has_cuda_driver()) GTEST_SKIP() << "this machine has a CUDA driver";
  EXPECT_CHUTE_ERROR(open_device("cuda:0"), ErrorCode::kUnsupported,
                     "device 'cuda:0' needs a CUDA GPU: no CUDA driver: cannot load libcuda.so.1");
}

TEST(StandInDevice, CopiesRunWhenSomethingWaitsForThem) {
  auto device = std::make_shared<StandInDevice>(0);
  auto memory = device->device_memory();
  std::byte* target = memory->allocate(64);
  std::vector<std::byte> host(64, std::byte{7});
  std::memset(target, 0, 64);
  device->copy_to_device(target, host.data(), 64);
  auto event = device->make_event();
  device->record(*event);
  EXPECT_FALSE(device->done(*event));
  EXPECT_EQ(target[0], std::byte{0});  // queued, not done
  device->synchronize(*event);
  EXPECT_TRUE(device->done(*event));
  EXPECT_EQ(target[63], std::byte{7});
  EXPECT_EQ(device->counters().copies.load(), 1);
  EXPECT_EQ(device->counters().host_syncs.load(), 1);
  memory->deallocate(target, 64);
  EXPECT_EQ(device->counters().device_bytes.load(), 0);
}

TEST(StandInDevice, OutOfMemoryNamesTheDevice) {
  auto device = std::make_shared<StandInDevice>(2, /*memory_limit=*/1000);
  auto memory = device->device_memory();
  std::byte* a = memory->allocate(600);
  EXPECT_CHUTE_ERROR(memory->allocate(600), ErrorCode::kIoError,
                     "standin:2: out of device memory allocating a batch buffer of 600 bytes");
  memory->deallocate(a, 600);
}

TEST(StandInDevice, ALostDeviceFailsEveryOperationNamingIt) {
  auto device = std::make_shared<StandInDevice>(1);
  auto event = device->make_event();
  device->lose();
  std::byte byte{};
  EXPECT_CHUTE_ERROR(device->copy_to_device(&byte, &byte, 1), ErrorCode::kIoError,
                     "standin:1: the device was lost");
  EXPECT_CHUTE_ERROR(device->synchronize(*event), ErrorCode::kIoError, "standin:1");
}

}  // namespace
}  // namespace chute
