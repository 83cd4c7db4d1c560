// The delivery stage over the host-memory stand-in device: the same code as on a GPU, with
// deferred memcpy copies, so wrong ordering or an early reuse of a host buffer shows as wrong
// data here.

#include "chute/pipeline/device_delivery.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "chute/device/standin_device.h"
#include "chute/util/error_test_util.h"

namespace chute {
namespace {

constexpr size_t kDeliveryBytes = 256;

// A host batch of one float32 array over the whole of `buffer`, filled with `value`.
Batch delivery_host_batch(const std::shared_ptr<std::byte>& buffer, float value) {
  Batch batch;
  batch.indices = {0};
  BatchArray array;
  array.name = "x";
  array.dtype = DataType{DTypeKind::kFloat, 4};
  array.shape = {1, static_cast<int64_t>(kDeliveryBytes / 4)};
  array.data = buffer.get();
  array.owner = buffer;
  auto* floats = reinterpret_cast<float*>(buffer.get());
  for (size_t i = 0; i < kDeliveryBytes / 4; ++i) floats[i] = value;
  batch.arrays.push_back(std::move(array));
  return batch;
}

float delivered_first(const Batch& batch) { return batch.arrays[0].as<float>()[0]; }
float delivered_last(const Batch& batch) {
  return batch.arrays[0].as<float>()[kDeliveryBytes / 4 - 1];
}

// Delivers a batch of `value` from a buffer of `host`.
Batch deliver_one(DeviceDelivery& delivery, BufferPool& host, float value) {
  std::shared_ptr<std::byte> buffer = host.acquire();
  Batch batch = delivery_host_batch(buffer, value);
  return delivery.deliver(std::move(batch), std::move(buffer));
}

TEST(DeviceDelivery, ConsumersSeeTheBatchOnceOrderedAfterTheCopy) {
  auto device = std::make_shared<StandInDevice>(0);
  DeviceDelivery delivery(device, kDeliveryBytes, 4);
  BufferPool host(kDeliveryBytes, 4);
  Batch batch = deliver_one(delivery, host, 5.0f);
  const BatchArray& x = batch.arrays[0];
  EXPECT_EQ(x.shape, (std::vector<int64_t>{1, kDeliveryBytes / 4}));
  ASSERT_NE(x.ready, nullptr);
  EXPECT_EQ(device->counters().copies.load(), 1);
  EXPECT_EQ(device->counters().records.load(), 1);
  // The copy is queued, not done: the stand-in runs it when a consumer's stream waits.
  x.ready->order_stream(7);
  EXPECT_EQ(delivered_first(batch), 5.0f);
  EXPECT_EQ(delivered_last(batch), 5.0f);
  EXPECT_EQ(delivery.stats().consumer_waits, 1);
  EXPECT_EQ(device->counters().host_syncs.load(), 0);  // never the host, never the device
}

TEST(DeviceDelivery, HostWaitForHostConsumers) {
  auto device = std::make_shared<StandInDevice>(0);
  DeviceDelivery delivery(device, kDeliveryBytes, 4);
  BufferPool host(kDeliveryBytes, 4);
  Batch batch = deliver_one(delivery, host, 3.0f);
  batch.arrays[0].ready->wait_host();
  EXPECT_EQ(delivered_first(batch), 3.0f);
  EXPECT_EQ(device->counters().host_syncs.load(), 1);
}

TEST(DeviceDelivery, HostBuffersAreHeldUntilTheirCopyCompletes) {
  auto device = std::make_shared<StandInDevice>(0);
  DeviceDelivery delivery(device, kDeliveryBytes, 8);
  BufferPool host(kDeliveryBytes, 8);
  std::vector<Batch> batches;
  for (int i = 0; i < 6; ++i) {
    batches.push_back(deliver_one(delivery, host, static_cast<float>(i)));
    // At most kMaxCopiesInFlight copies outstanding: the producer waited for the oldest.
    EXPECT_LE(delivery.copies_in_flight(), DeviceDelivery::kMaxCopiesInFlight);
    // The host buffers of copies not done are not back in the pool, so the next batch cannot
    // be assembled into one (it would overwrite what the deferred copy still has to read).
    EXPECT_EQ(host.allocated() - host.idle(), delivery.copies_in_flight());
  }
  EXPECT_GT(delivery.stats().host_waits, 0);
  for (int i = 0; i < 6; ++i) {
    batches[static_cast<size_t>(i)].arrays[0].ready->order_stream(1);
    EXPECT_EQ(delivered_first(batches[static_cast<size_t>(i)]), static_cast<float>(i)) << i;
    EXPECT_EQ(delivered_last(batches[static_cast<size_t>(i)]), static_cast<float>(i)) << i;
  }
  delivery.drain();
  EXPECT_EQ(delivery.copies_in_flight(), 0u);
  EXPECT_EQ(host.idle(), host.allocated());
}

TEST(DeviceDelivery, ReleasedBuffersReturnAndTheNextCopyWaitsForTheConsumer) {
  auto device = std::make_shared<StandInDevice>(0);
  DeviceDelivery delivery(device, kDeliveryBytes, 4);
  BufferPool host(kDeliveryBytes, 4);
  const std::byte* first = nullptr;
  {
    Batch batch = deliver_one(delivery, host, 1.0f);
    batch.arrays[0].ready->order_stream(9);  // the consumer's stream
    first = batch.arrays[0].data;
    delivery.drain();
    // A view of the array (a DLPack capsule) keeps the buffer alive after the batch goes.
    std::shared_ptr<std::byte> view = batch.arrays[0].owner;
    batch = Batch{};
    EXPECT_EQ(delivery.pool().idle(), 0u);
  }
  // The deleter recorded a release event on the consumer's stream and gave the buffer back.
  EXPECT_EQ(device->counters().consumer_records.load(), 1);
  EXPECT_EQ(delivery.pool().idle(), 1u);
  Batch again = deliver_one(delivery, host, 2.0f);
  EXPECT_EQ(again.arrays[0].data, first);  // recycled
  EXPECT_EQ(device->counters().own_stream_waits.load(), 1);
  EXPECT_EQ(delivery.stats().release_waits, 1);
  again.arrays[0].ready->wait_host();
  EXPECT_EQ(delivered_first(again), 2.0f);
}

TEST(DeviceDelivery, DeviceMemoryStaysBoundedWhileTheConsumerReleases) {
  auto device = std::make_shared<StandInDevice>(0);
  DeviceDelivery delivery(device, kDeliveryBytes, 4);
  BufferPool host(kDeliveryBytes, 4);
  std::vector<Batch> held;
  for (int i = 0; i < 200; ++i) {
    held.push_back(deliver_one(delivery, host, static_cast<float>(i)));
    held.back().arrays[0].ready->order_stream(1);
    if (held.size() > 2) held.erase(held.begin());  // the consumer holds two batches
  }
  delivery.drain();
  EXPECT_LE(delivery.stats().device_buffers, 2 + 1 + 1);
  EXPECT_LE(device->counters().device_bytes.load(), static_cast<int64_t>(4 * kDeliveryBytes));
  held.clear();
  EXPECT_LE(delivery.pool().idle(), 4u);
}

TEST(DeviceDelivery, OutOfDeviceMemoryNamesTheDevice) {
  auto device = std::make_shared<StandInDevice>(0, /*memory_limit=*/2 * kDeliveryBytes);
  DeviceDelivery delivery(device, kDeliveryBytes, 4);
  BufferPool host(kDeliveryBytes, 4);
  Batch a = deliver_one(delivery, host, 1.0f);
  Batch b = deliver_one(delivery, host, 2.0f);
  const std::string message =
      testing::message_of([&] { deliver_one(delivery, host, 3.0f); }, ErrorCode::kIoError);
  EXPECT_THAT(message, ::testing::HasSubstr("standin:0: out of device memory"));
}

TEST(DeviceDelivery, ALostDeviceIsAnErrorNamingIt) {
  auto device = std::make_shared<StandInDevice>(4);
  DeviceDelivery delivery(device, kDeliveryBytes, 4);
  BufferPool host(kDeliveryBytes, 4);
  Batch a = deliver_one(delivery, host, 1.0f);
  device->lose();
  const std::string message =
      testing::message_of([&] { deliver_one(delivery, host, 2.0f); }, ErrorCode::kIoError);
  EXPECT_THAT(message, ::testing::HasSubstr("standin:4: the device was lost"));
}

}  // namespace
}  // namespace chute
