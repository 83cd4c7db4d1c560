#include "chute/device/cuda_driver.h"

#include <dlfcn.h>

#include <mutex>

#include "chute/util/error.h"

namespace chute::cuda {
namespace {

struct Loaded {
  Driver driver{};
  std::string error;  // empty when loaded
};

template <typename F>
bool bind(void* library, const char* name, F*& out, std::string& error) {
  out = reinterpret_cast<F*>(::dlsym(library, name));
  if (out == nullptr && error.empty()) error = std::string("libcuda.so.1 lacks ") + name;
  return out != nullptr;
}

Loaded load() {
  Loaded loaded;
  void* library = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (library == nullptr) {
    const char* why = ::dlerror();
    loaded.error = std::string("no CUDA driver: cannot load libcuda.so.1 (") +
                   (why != nullptr ? why : "not found") + ")";
    return loaded;
  }
  Driver& d = loaded.driver;
  std::string& e = loaded.error;
  // The versioned names are what cuda.h's macros select (the _v2 ABI of 64-bit pointers).
  bind(library, "cuInit", d.cuInit, e);
  bind(library, "cuDriverGetVersion", d.cuDriverGetVersion, e);
  bind(library, "cuDeviceGetCount", d.cuDeviceGetCount, e);
  bind(library, "cuDeviceGet", d.cuDeviceGet, e);
  bind(library, "cuDeviceGetName", d.cuDeviceGetName, e);
  bind(library, "cuDevicePrimaryCtxRetain", d.cuDevicePrimaryCtxRetain, e);
  bind(library, "cuDevicePrimaryCtxRelease_v2", d.cuDevicePrimaryCtxRelease, e);
  bind(library, "cuCtxGetCurrent", d.cuCtxGetCurrent, e);
  bind(library, "cuCtxSetCurrent", d.cuCtxSetCurrent, e);
  bind(library, "cuMemAlloc_v2", d.cuMemAlloc, e);
  bind(library, "cuMemFree_v2", d.cuMemFree, e);
  bind(library, "cuMemHostAlloc", d.cuMemHostAlloc, e);
  bind(library, "cuMemFreeHost", d.cuMemFreeHost, e);
  bind(library, "cuMemHostRegister_v2", d.cuMemHostRegister, e);
  bind(library, "cuMemHostUnregister", d.cuMemHostUnregister, e);
  bind(library, "cuMemcpyHtoDAsync_v2", d.cuMemcpyHtoDAsync, e);
  bind(library, "cuMemcpyDtoH_v2", d.cuMemcpyDtoH, e);
  bind(library, "cuStreamCreate", d.cuStreamCreate, e);
  bind(library, "cuStreamDestroy_v2", d.cuStreamDestroy, e);
  bind(library, "cuStreamSynchronize", d.cuStreamSynchronize, e);
  bind(library, "cuStreamWaitEvent", d.cuStreamWaitEvent, e);
  bind(library, "cuEventCreate", d.cuEventCreate, e);
  bind(library, "cuEventDestroy_v2", d.cuEventDestroy, e);
  bind(library, "cuEventRecord", d.cuEventRecord, e);
  bind(library, "cuEventQuery", d.cuEventQuery, e);
  bind(library, "cuEventSynchronize", d.cuEventSynchronize, e);
  bind(library, "cuEventElapsedTime", d.cuEventElapsedTime, e);
  bind(library, "cuGetErrorName", d.cuGetErrorName, e);
  bind(library, "cuGetErrorString", d.cuGetErrorString, e);
  if (!e.empty()) return loaded;
  const CUresult init = d.cuInit(0);
  if (init != kSuccess) {
    const char* name = nullptr;
    d.cuGetErrorName(init, &name);
    e = std::string("the CUDA driver found no usable GPU: cuInit failed with ") +
        (name != nullptr ? name : std::to_string(init));
  }
  return loaded;
}

const Loaded& loaded() {
  static const Loaded instance = load();  // dlopen once; the library stays loaded
  return instance;
}

}  // namespace

const Driver& driver(const std::string& feature) {
  const Loaded& l = loaded();
  if (!l.error.empty()) fail(ErrorCode::kUnsupported, "{} needs a CUDA GPU: {}", feature, l.error);
  return l.driver;
}

std::string error_text(CUresult result) {
  const Loaded& l = loaded();
  const char* name = nullptr;
  const char* text = nullptr;
  if (l.driver.cuGetErrorName != nullptr) l.driver.cuGetErrorName(result, &name);
  if (l.driver.cuGetErrorString != nullptr) l.driver.cuGetErrorString(result, &text);
  std::string out = name != nullptr ? name : "CUDA error " + std::to_string(result);
  if (text != nullptr) out += std::string(" (") + text + ")";
  return out;
}

}  // namespace chute::cuda
