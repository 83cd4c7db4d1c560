// A CUDA GPU through the driver API (cuda_driver.h): its primary context (the one PyTorch and
// JAX use), one non-blocking stream of chute's own for copies, events without timing.
// Every call makes the primary context current for its duration and restores the caller's.

#include <fmt/format.h>

#include <mutex>
#include <string>
#include <unordered_map>

#include "chute/device/cuda_driver.h"
#include "chute/device/device.h"
#include "chute/util/error.h"

namespace chute {
namespace {

class CudaDevice;

/// Makes `context` current on this thread until the end of the scope.
class ScopedContext {
 public:
  ScopedContext(const cuda::Driver& d, cuda::CUcontext context) : d_(d) {
    d_.cuCtxGetCurrent(&previous_);
    if (previous_ != context) {
      d_.cuCtxSetCurrent(context);
      switched_ = true;
    }
  }
  ~ScopedContext() {
    if (switched_) d_.cuCtxSetCurrent(previous_);
  }
  ScopedContext(const ScopedContext&) = delete;
  ScopedContext& operator=(const ScopedContext&) = delete;

 private:
  const cuda::Driver& d_;
  cuda::CUcontext previous_ = nullptr;
  bool switched_ = false;
};

class CudaEvent final : public DeviceEvent {
 public:
  CudaEvent(std::shared_ptr<const CudaDevice> device, cuda::CUevent event)
      : device_(std::move(device)), event_(event) {}
  ~CudaEvent() override;
  cuda::CUevent get() const { return event_; }

 private:
  std::shared_ptr<const CudaDevice> device_;
  cuda::CUevent event_;
};

class CudaDevice final : public Device, public std::enable_shared_from_this<CudaDevice> {
 public:
  explicit CudaDevice(int ordinal)
      : d_(cuda::driver(fmt::format("device 'cuda:{}'", ordinal))),
        name_(fmt::format("cuda:{}", ordinal)),
        ordinal_(ordinal) {
    int count = 0;
    check(d_.cuDeviceGetCount(&count), "cuDeviceGetCount");
    if (ordinal >= count) {
      fail(ErrorCode::kNotFound, "device '{}': this machine has {} CUDA GPU{} (cuda:0{})", name_,
           count, count == 1 ? "" : "s", count > 1 ? fmt::format(" to cuda:{}", count - 1) : "");
    }
    check(d_.cuDeviceGet(&device_, ordinal), "cuDeviceGet");
    check(d_.cuDevicePrimaryCtxRetain(&context_, device_), "cuDevicePrimaryCtxRetain");
    ScopedContext scope(d_, context_);
    check(d_.cuStreamCreate(&stream_, cuda::kStreamNonBlocking), "cuStreamCreate");
  }

  ~CudaDevice() override {
    {
      ScopedContext scope(d_, context_);
      d_.cuStreamSynchronize(stream_);
      d_.cuStreamDestroy(stream_);
    }
    d_.cuDevicePrimaryCtxRelease(device_);
  }

  /// Throws for a failed driver call, naming the device and the call.
  void check(cuda::CUresult result, const char* call) const {
    if (result == cuda::kSuccess) return;
    fail(ErrorCode::kIoError, "{}: {} failed: {}", name_, call, cuda::error_text(result));
  }

  const std::string& name() const override { return name_; }
  MemoryPlace place() const override { return {MemoryPlace::kCuda, ordinal_}; }
  std::shared_ptr<BufferAllocator> device_memory() override;
  std::shared_ptr<BufferAllocator> pinned_memory(bool consumer_copies = true) override;

  std::unique_ptr<DeviceEvent> make_event() override {
    ScopedContext scope(d_, context_);
    cuda::CUevent event = nullptr;
    check(d_.cuEventCreate(&event, cuda::kEventDisableTiming), "cuEventCreate");
    return std::make_unique<CudaEvent>(shared_from_this(), event);
  }

  void copy_to_device(std::byte* device, const std::byte* host, size_t bytes) override {
    ScopedContext scope(d_, context_);
    check(d_.cuMemcpyHtoDAsync(reinterpret_cast<cuda::CUdeviceptr>(device), host, bytes, stream_),
          "cuMemcpyHtoDAsync (copying a batch to the device)");
  }
  void record(DeviceEvent& event) override {
    ScopedContext scope(d_, context_);
    check(d_.cuEventRecord(get(event), stream_), "cuEventRecord");
  }
  void record_on(DeviceEvent& event, uintptr_t stream) override {
    ScopedContext scope(d_, context_);
    check(d_.cuEventRecord(get(event), consumer(stream)), "cuEventRecord (consumer's stream)");
  }
  void wait_on_own_stream(DeviceEvent& event) override {
    ScopedContext scope(d_, context_);
    check(d_.cuStreamWaitEvent(stream_, get(event), 0), "cuStreamWaitEvent");
  }
  void wait_on_stream(uintptr_t stream, DeviceEvent& event) override {
    ScopedContext scope(d_, context_);
    check(d_.cuStreamWaitEvent(consumer(stream), get(event), 0),
          "cuStreamWaitEvent (consumer's stream)");
  }
  bool done(DeviceEvent& event) override {
    ScopedContext scope(d_, context_);
    const cuda::CUresult result = d_.cuEventQuery(get(event));
    if (result == cuda::kNotReady) return false;
    check(result, "cuEventQuery");
    return true;
  }
  void synchronize(DeviceEvent& event) override {
    ScopedContext scope(d_, context_);
    check(d_.cuEventSynchronize(get(event)), "cuEventSynchronize");
  }

  const cuda::Driver& driver_api() const { return d_; }
  cuda::CUcontext context() const { return context_; }

 private:
  static cuda::CUevent get(DeviceEvent& event) { return static_cast<CudaEvent&>(event).get(); }
  static cuda::CUstream consumer(uintptr_t stream) {
    return reinterpret_cast<cuda::CUstream>(stream);
  }

  const cuda::Driver& d_;
  std::string name_;
  int ordinal_;
  cuda::CUdevice device_ = 0;
  cuda::CUcontext context_ = nullptr;
  cuda::CUstream stream_ = nullptr;
};

CudaEvent::~CudaEvent() {
  ScopedContext scope(device_->driver_api(), device_->context());
  device_->driver_api().cuEventDestroy(event_);
}

class CudaMemory final : public BufferAllocator {
 public:
  CudaMemory(std::shared_ptr<CudaDevice> device, bool pinned, bool consumer_copies = false)
      : device_(std::move(device)), pinned_(pinned), consumer_copies_(consumer_copies) {}

  std::byte* allocate(size_t bytes) override {
    const cuda::Driver& d = device_->driver_api();
    ScopedContext scope(d, device_->context());
    if (pinned_) {
      void* memory = nullptr;
      const cuda::CUresult result = d.cuMemHostAlloc(&memory, bytes, cuda::kMemHostAllocPortable);
      if (result != cuda::kSuccess) {
        fail(ErrorCode::kIoError,
             "{}: cannot allocate {} bytes of page-locked host memory for a batch buffer: "
             "cuMemHostAlloc failed: {} (see ulimit -l and the machine's free memory)",
             device_->name(), bytes, cuda::error_text(result));
      }
      return static_cast<std::byte*>(memory);
    }
    cuda::CUdeviceptr memory = 0;
    const cuda::CUresult result = d.cuMemAlloc(&memory, bytes);
    if (result == cuda::kOutOfMemory) {
      fail(ErrorCode::kIoError,
           "{}: out of device memory allocating a batch buffer of {} bytes (cuMemAlloc: {}); "
           "use a smaller batch_size or prefetch, or free GPU memory",
           device_->name(), bytes, cuda::error_text(result));
    }
    device_->check(result, "cuMemAlloc (a batch buffer)");
    return reinterpret_cast<std::byte*>(memory);
  }

  // A framework may still be copying from a released page-locked buffer (PyTorch's
  // `.to("cuda", non_blocking=True)` on the default stream): an event recorded on the legacy
  // default stream when the buffer comes back, waited for before chute writes it again.
  void released(std::byte* memory) noexcept override {
    if (!consumer_copies_) return;
    const cuda::Driver& d = device_->driver_api();
    ScopedContext scope(d, device_->context());
    std::lock_guard lock(mutex_);
    cuda::CUevent& event = released_[memory];
    if (event == nullptr && d.cuEventCreate(&event, cuda::kEventDisableTiming) != cuda::kSuccess) {
      event = nullptr;
      return;
    }
    d.cuEventRecord(event, cuda::legacy_stream());
  }
  void reusing(std::byte* memory) override {
    if (!consumer_copies_) return;
    cuda::CUevent event = nullptr;
    {
      std::lock_guard lock(mutex_);
      const auto found = released_.find(memory);
      if (found != released_.end()) event = found->second;
    }
    if (event == nullptr) return;
    const cuda::Driver& d = device_->driver_api();
    ScopedContext scope(d, device_->context());
    device_->check(d.cuEventSynchronize(event),
                   "cuEventSynchronize (a page-locked batch buffer's last copy)");
  }

  void deallocate(std::byte* memory, size_t /*bytes*/) noexcept override {
    const cuda::Driver& d = device_->driver_api();
    ScopedContext scope(d, device_->context());
    if (pinned_) {
      {
        std::lock_guard lock(mutex_);
        const auto found = released_.find(memory);
        if (found != released_.end()) {
          if (found->second != nullptr) {
            d.cuEventSynchronize(found->second);
            d.cuEventDestroy(found->second);
          }
          released_.erase(found);
        }
      }
      d.cuMemFreeHost(memory);
    } else {
      d.cuMemFree(reinterpret_cast<cuda::CUdeviceptr>(memory));
    }
  }
  // Releases ordered after a consumer's queued work: device buffers (the next copy into one
  // waits for it on chute's stream) and page-locked buffers a framework copies from (the
  // producer waits for it): reusing the newest would wait for the work queued last.
  bool reuse_oldest_first() const override { return !pinned_ || consumer_copies_; }
  // Page-locked memory is backed when allocated; device memory has no pages to fault.
  MemoryPlace place() const override { return pinned_ ? MemoryPlace{} : device_->place(); }
  std::string describe() const override {
    return pinned_ ? "page-locked host memory (" + device_->name() + ")"
                   : device_->name() + " device memory";
  }

 private:
  std::shared_ptr<CudaDevice> device_;
  bool pinned_;
  bool consumer_copies_;
  std::mutex mutex_;
  std::unordered_map<const std::byte*, cuda::CUevent>
      released_;  // page-locked buffers' last release
};

std::shared_ptr<BufferAllocator> CudaDevice::device_memory() {
  return std::make_shared<CudaMemory>(shared_from_this(), false);
}

std::shared_ptr<BufferAllocator> CudaDevice::pinned_memory(bool consumer_copies) {
  return std::make_shared<CudaMemory>(shared_from_this(), true, consumer_copies);
}

}  // namespace

DevicePtr open_cuda_device(int ordinal) { return std::make_shared<CudaDevice>(ordinal); }

}  // namespace chute
