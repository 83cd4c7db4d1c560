#pragma once
// The CUDA driver API, loaded at run time: chute declares the few entry points it calls and
// finds them in libcuda.so.1 with dlopen, so it builds and runs with no CUDA toolkit, and
// without a GPU until a loader asks for one. Internal to src/chute/device.

#include <cstddef>
#include <cstdint>
#include <string>

namespace chute::cuda {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;  // NOLINT(runtime/int): the driver's own type
struct CUctx_st;
struct CUstream_st;
struct CUevent_st;
using CUcontext = CUctx_st*;
using CUstream = CUstream_st*;
using CUevent = CUevent_st*;

inline constexpr CUresult kSuccess = 0;
inline constexpr CUresult kOutOfMemory = 2;
inline constexpr CUresult kNotReady = 600;
inline constexpr unsigned kStreamNonBlocking = 0x1;
inline constexpr unsigned kEventDisableTiming = 0x2;
inline constexpr unsigned kMemHostAllocPortable = 0x1;
inline constexpr int kAttributePciBusId = 33;
/// The legacy default stream as a stream handle (CU_STREAM_LEGACY), DLPack's stream 1.
inline CUstream legacy_stream() { return reinterpret_cast<CUstream>(uintptr_t{1}); }

struct Driver {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDriverGetVersion)(int*);
  CUresult (*cuDeviceGetCount)(int*);
  CUresult (*cuDeviceGet)(CUdevice*, int);
  CUresult (*cuDeviceGetName)(char*, int, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
  CUresult (*cuCtxGetCurrent)(CUcontext*);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuMemAlloc)(CUdeviceptr*, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemHostAlloc)(void**, size_t, unsigned);
  CUresult (*cuMemFreeHost)(void*);
  CUresult (*cuMemHostRegister)(void*, size_t, unsigned);
  CUresult (*cuMemHostUnregister)(void*);
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void*, size_t, CUstream);
  CUresult (*cuMemcpyDtoH)(void*, CUdeviceptr, size_t);
  CUresult (*cuStreamCreate)(CUstream*, unsigned);
  CUresult (*cuStreamDestroy)(CUstream);
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuStreamWaitEvent)(CUstream, CUevent, unsigned);
  CUresult (*cuEventCreate)(CUevent*, unsigned);
  CUresult (*cuEventDestroy)(CUevent);
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuEventQuery)(CUevent);
  CUresult (*cuEventSynchronize)(CUevent);
  CUresult (*cuEventElapsedTime)(float*, CUevent, CUevent);
  CUresult (*cuGetErrorName)(CUresult, const char**);
  CUresult (*cuGetErrorString)(CUresult, const char**);
};

/// The driver, loaded and initialised once (cuInit). Throws kUnsupported naming what is missing
/// (no libcuda.so.1, a missing entry point, cuInit failing: no device or no driver) and what
/// `feature` needed it.
const Driver& driver(const std::string& feature);

/// "CUDA_ERROR_OUT_OF_MEMORY (out of memory)".
std::string error_text(CUresult result);

}  // namespace chute::cuda
