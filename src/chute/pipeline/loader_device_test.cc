// The Loader delivering to a device, over the host-memory stand-in (deferred memcpy copies):
// batches equal the host loader's in content and order, device buffers stay bounded and come
// back when the consumer releases them, and bad names, missing drivers, exhausted memory and a
// lost device are errors naming the device.

#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "chute/device/standin_device.h"
#include "chute/pipeline/device_delivery.h"
#include "chute/pipeline/loader.h"
#include "chute/pipeline/loader_test_support.h"
#include "chute/util/error_test_util.h"

namespace chute {
namespace {

using namespace chute::loader_testing;  // NOLINT(build/namespaces)
using ::testing::HasSubstr;

LoaderOptions device_loader_options(size_t prefetch = 2) {
  LoaderOptions o;
  o.batch_size = 4;
  o.threads = 2;
  o.prefetch = prefetch;
  o.seed = 7;
  return o;
}

struct DeviceSeen {
  int64_t epoch, index;
  std::vector<int64_t> indices;
  std::vector<std::vector<std::byte>> arrays;
  bool operator==(const DeviceSeen&) const = default;
};

// What a device consumer sees: its stream ordered after the copy, then the bytes.
DeviceSeen device_seen(const Batch& batch, bool device) {
  DeviceSeen s{batch.epoch, batch.index, batch.indices, {}};
  for (const BatchArray& a : batch.arrays) {
    if (device) {
      EXPECT_NE(a.ready, nullptr);
      a.ready->order_stream(1);
    }
    s.arrays.emplace_back(a.data, a.data + a.nbytes());
  }
  return s;
}

std::vector<DeviceSeen> run_device_epochs(Loader& loader, int epochs, bool device) {
  std::vector<DeviceSeen> out;
  for (int e = 0; e < epochs; ++e) {
    for (const Batch& batch : loader) out.push_back(device_seen(batch, device));
  }
  return out;
}

TEST(LoaderDevice, BatchesEqualTheHostLoadersInOrder) {
  PackedFixture fixture(37);
  Loader host(packed_dataset(fixture), device_loader_options());
  const std::vector<DeviceSeen> expected = run_device_epochs(host, 2, false);
  for (size_t prefetch : {1, 3}) {
    auto device = std::make_shared<StandInDevice>(0);
    LoaderOptions o = device_loader_options(prefetch);
    o.device_handle = device;
    Loader loader(packed_dataset(fixture), o);
    EXPECT_EQ(run_device_epochs(loader, 2, true), expected) << "prefetch " << prefetch;
    loader.stop();  // the producer runs ahead into the next epoch: counted once it is joined
    const LoaderStats stats = loader.stats();
    ASSERT_TRUE(stats.delivery.has_value());
    // Every batch queued was copied first; one more may have been copied when the queue closed.
    EXPECT_GE(stats.delivery->copies, stats.batches_produced);
    EXPECT_LE(stats.delivery->copies, stats.batches_produced + 1);
    EXPECT_EQ(
        device->counters().host_syncs.load() + device->counters().consumer_stream_waits.load(),
        stats.delivery->host_waits + stats.delivery->consumer_waits);
  }
}

TEST(LoaderDevice, NamedStandInDevice) {
  PackedFixture fixture(12);
  LoaderOptions o = device_loader_options();
  o.device = "standin:1";
  Loader loader(packed_dataset(fixture), o);
  std::optional<Batch> batch = (loader.begin_epoch(), loader.next());
  ASSERT_TRUE(batch.has_value());
  EXPECT_TRUE(batch->arrays[0].place.on_host());  // the stand-in's memory is host memory
  EXPECT_NE(batch->arrays[0].ready, nullptr);
}

TEST(LoaderDevice, DeviceBuffersAreBoundedAndReturnThroughTheirOwners) {
  PackedFixture fixture(64);
  auto device = std::make_shared<StandInDevice>(0);
  LoaderOptions o = device_loader_options(2);
  o.device_handle = device;
  Loader loader(packed_dataset(fixture), o);
  std::vector<std::shared_ptr<std::byte>> held;  // what DLPack capsules would hold
  for (int epoch = 0; epoch < 3; ++epoch) {
    for (const Batch& batch : loader) {
      batch.arrays[0].ready->order_stream(1);
      held.push_back(batch.arrays[0].owner);
      if (held.size() > 2) held.erase(held.begin());
    }
  }
  const LoaderStats stats = loader.stats();
  // The queue, the batch being copied, the consumer's two: the pool never grew past them.
  EXPECT_LE(stats.delivery->device_buffers, 2 + 1 + 2 + 1);
  EXPECT_GT(stats.delivery->release_waits, 0);  // copies waited for the consumer's release
  const int64_t bytes = device->counters().device_bytes.load();
  held.clear();
  loader.stop();
  EXPECT_LE(device->counters().device_bytes.load(), bytes);
}

TEST(LoaderDevice, PinnedHostBuffersComeFromTheDevice) {
  PackedFixture fixture(12);
  auto device = std::make_shared<StandInDevice>(0);
  LoaderOptions o = device_loader_options();
  o.device_handle = device;
  o.pin_memory = true;
  Loader loader(packed_dataset(fixture), o);
  EXPECT_GT(device->counters().pinned_bytes.load(), 0);
  EXPECT_EQ(run_device_epochs(loader, 1, true).size(), 3u);
}

TEST(LoaderDevice, DeliveredBatchesAreCopiedFromPageLockedMemory) {
  // Without pin_memory too: a copy from pageable memory is staged by the driver on the producer
  // thread, which then assembles and copies in turn.
  PackedFixture fixture(24);
  for (bool pin_memory : {false, true}) {
    auto device = std::make_shared<StandInDevice>(0);
    LoaderOptions o = device_loader_options();
    o.device_handle = device;
    o.pin_memory = pin_memory;
    Loader loader(packed_dataset(fixture), o);
    EXPECT_EQ(run_device_epochs(loader, 2, true).size(), 12u);
    loader.stop();
    EXPECT_GT(device->counters().copies.load(), 0);
    EXPECT_EQ(device->counters().pageable_copies.load(), 0) << "pin_memory " << pin_memory;
    // Host buffers are held only while assembled and copied, not for the queue's depth.
    EXPECT_LE(loader.stats().buffers_allocated,
              static_cast<int64_t>(2 + DeviceDelivery::kMaxCopiesInFlight + 1));
  }
}

bool loader_device_has_cuda_driver() { return ::dlopen("libcuda.so.1", RTLD_NOW) != nullptr; }

TEST(LoaderDevice, WithoutAGpuPinMemoryAndCudaAreErrors) {
  if (loader_device_has_cuda_driver()) GTEST_SKIP() << "this machine has a CUDA driver";
  PackedFixture fixture(12);
  LoaderOptions o = device_loader_options();
  o.pin_memory = true;
  EXPECT_THAT(testing::message_of([&] { Loader loader(packed_dataset(fixture), o); },
                                  ErrorCode::kUnsupported),
              HasSubstr("pin_memory=true needs a CUDA GPU: no CUDA driver"));
  o.pin_memory = false;
  o.device = "cuda:0";
  EXPECT_THAT(testing::message_of([&] { Loader loader(packed_dataset(fixture), o); },
                                  ErrorCode::kUnsupported),
              HasSubstr("device 'cuda:0' needs a CUDA GPU"));
}

TEST(LoaderDevice, BadDeviceNames) {
  PackedFixture fixture(12);
  LoaderOptions o = device_loader_options();
  o.device = "gpu0";
  EXPECT_THAT(testing::message_of([&] { Loader loader(packed_dataset(fixture), o); }),
              HasSubstr("device 'gpu0': unknown device kind"));
}

TEST(LoaderDevice, OutOfDeviceMemoryNamesTheDevice) {
  PackedFixture fixture(12);
  LoaderOptions o = device_loader_options();
  o.device_handle = std::make_shared<StandInDevice>(3, /*memory_limit=*/1000);
  EXPECT_THAT(
      testing::message_of([&] { Loader loader(packed_dataset(fixture), o); }, ErrorCode::kIoError),
      HasSubstr("standin:3: out of device memory"));
}

TEST(LoaderDevice, ALostDeviceReachesTheConsumerNamingIt) {
  PackedFixture fixture(40);
  auto device = std::make_shared<StandInDevice>(0);
  LoaderOptions o = device_loader_options();
  o.device_handle = device;
  Loader loader(packed_dataset(fixture), o);
  loader.begin_epoch();
  ASSERT_TRUE(loader.next().has_value());
  device->lose();
  const std::string message = testing::message_of(
      [&] {
        while (loader.next()) {
        }
      },
      ErrorCode::kIoError);
  EXPECT_THAT(message, HasSubstr("standin:0"));
  EXPECT_THAT(message, HasSubstr("lost"));
}

}  // namespace
}  // namespace chute
