// CudaIpc: device memory another process shares through a CUDA IPC handle
// (cudaIpcGetMemHandle on its side), as Triton's CUDA shared memory
// extension uses it: open the handle on a GPU, copy bytes between that
// memory and the host, close it; and, for a client, allocate device memory
// and export its handle. The real one binds libcuda's driver API
// through the DynamicLoader seam, in the GPU's primary context (the one the
// CUDA runtime and ORT use); tests substitute a fake that keeps "device"
// memory on the host.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "gpu/dynamic_loader.h"
#include "status/expected.h"

namespace ortgpu::gpu {

// The size of a cudaIpcMemHandle_t / CUipcMemHandle.
inline constexpr size_t kCudaIpcHandleBytes = 64;

class CudaIpc {
 public:
  virtual ~CudaIpc() = default;
  // Maps the memory behind `handle` (kCudaIpcHandleBytes bytes) on GPU
  // `device`; returns its device address. InvalidArgument for a handle of
  // another size; Unavailable without a driver; the driver's error
  // otherwise (a handle from a process that has gone, another GPU, ...).
  virtual Expected<uint64_t> Open(const std::string& handle, int device) = 0;
  // Unmaps what Open returned. Errors are only logged by callers.
  virtual Status Close(uint64_t address, int device) = 0;
  // `bytes` bytes from device memory at `src` into host memory, or back.
  virtual Status ToHost(void* dst, uint64_t src, size_t bytes, int device) = 0;
  virtual Status ToDevice(uint64_t dst, const void* src, size_t bytes, int device) = 0;

  // The client's side (ortgpu perf --shared-memory cuda): `bytes` of this
  // process's device memory on GPU `device` (Unavailable without a driver,
  // ResourceExhausted when the GPU has no room), freed again, and the IPC
  // handle (kCudaIpcHandleBytes bytes) another process opens it with.
  virtual Expected<uint64_t> Allocate(size_t bytes, int device) = 0;
  virtual Status Free(uint64_t address, int device) = 0;
  virtual Expected<std::string> ExportHandle(uint64_t address, int device) = 0;
};

// libcuda's driver API (loaded on first use through `loader`, never null).
std::shared_ptr<CudaIpc> MakeDriverCudaIpc(DynamicLoader& loader = RealDynamicLoader(),
                                           std::string library = "libcuda.so.1");

}  // namespace ortgpu::gpu
