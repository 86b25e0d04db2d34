// DeviceMemory: the CUDA memory operations a GPU instance's batch path needs
// when request rows already live in device memory (CUDA shared memory):
// allocate a device buffer, copy host to device, device to device (or
// between GPUs), device to host, zero a range. The real one uses the CUDA
// runtime the CUDA EP loaded (the same cudart ort_internal::CopyBytes
// uses), on a non-blocking stream of the calling thread's own for each GPU;
// tests substitute testing::FakeDeviceMemory, which keeps "device" memory
// on the host and records every copy, so a test can assert that a batch of
// device rows made no host copy.
//
// Copies are asynchronous on the calling thread's stream for the GPU named;
// Wait returns once every copy this thread issued for that GPU is done.
// Thread-safety: every method may be called from any thread; the streams
// are per thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "status/expected.h"

namespace ortgpu {

class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;
  // True when the addresses this memory gives are ordinary host memory
  // (the fake): ORT then views its buffers as CPU memory.
  virtual bool host_addressable() const { return false; }
  // `bytes` bytes on GPU `device`, freed with Free. ResourceExhausted when
  // the GPU has no room; Unavailable without the CUDA runtime.
  virtual Expected<uint64_t> Allocate(size_t bytes, int device) = 0;
  virtual void Free(uint64_t address, int device) = 0;
  // Host to device, device to host.
  virtual Status ToDevice(uint64_t dst, const void* src, size_t bytes, int device) = 0;
  virtual Status ToHost(void* dst, uint64_t src, size_t bytes, int device) = 0;
  // Device to device: on one GPU when the devices are equal, else peer to
  // peer (through the host when the GPUs have no peer access); an error
  // from the runtime is InvalidArgument naming both GPUs.
  virtual Status DeviceToDevice(uint64_t dst, int dst_device, uint64_t src, int src_device, size_t bytes) = 0;
  // Zeroes `bytes` at `dst`.
  virtual Status Zero(uint64_t dst, size_t bytes, int device) = 0;
  // Waits for this thread's copies on `device`.
  virtual Status Wait(int device) = 0;
  // Makes GPU `device` the calling thread's current device (cudaSetDevice),
  // so what the thread does next through the CUDA runtime lands there and
  // no context is made on GPU 0 by default. Every thread that drives a GPU
  // instance calls it first (BatchRunner::BindDevice). InvalidArgument
  // when the GPU is not visible; Unavailable without the CUDA runtime.
  virtual Status SetCurrentDevice(int device) = 0;
};

// The CUDA runtime's (libcudart as the CUDA EP loaded it); one per process.
std::shared_ptr<DeviceMemory> CudaRuntimeDeviceMemory();

}  // namespace ortgpu
