// Internal to src/ort/: moving ORT values' bytes to and from host memory,
// shared by Session, BoundRunner and InputStaging. Includes ORT's C++ API, so
// nothing outside src/ort/ includes it. Thread-safe.
#pragma once

#include <cstddef>
#include <shared_mutex>
#include <string>

#include <onnxruntime_cxx_api.h>

#include "ort/session.h"
#include "ort/tensor.h"
#include "status/expected.h"

namespace ortgpu::ort_internal {

// cudaMemcpyKind values.
inline constexpr int kCudaMemcpyHostToDevice = 1;
inline constexpr int kCudaMemcpyDeviceToHost = 2;

// A symbol of the CUDA runtime the CUDA EP already loaded (or can load), or
// null.
void* CudartSymbol(const char* name);

// Copies `bytes` between host and device memory with the cudart the CUDA EP
// loaded, else with ORT's CopyTensors on views of the two buffers
// (`device_value` gives the device side's memory info and shape).
Status CopyBytes(void* dst, const void* src, size_t bytes, int kind, const Ort::Value& device_value);

// Device memory of GPU `device` through the cudart the CUDA EP loaded (the
// calling thread's current device is restored): for buffers ortgpu owns,
// such as shared initializers. Unavailable without a CUDA runtime,
// ResourceExhausted when the GPU is full.
Expected<void*> CudaMalloc(int device, size_t bytes);
void CudaFree(int device, void* ptr);
// A synchronous host-to-device copy (cudaMemcpy), outside the hot path.
Status CudaCopyToDevice(void* dst, const void* src, size_t bytes);

// CUDA graph capture in ORT uses the global capture mode, in which another
// thread's synchronous CUDA calls (cudaMemcpy, cudaMalloc) fail the capture.
// Capturing runs hold this exclusively; copies and runs of other sessions
// hold it shared (uncontended once every graph is captured).
std::shared_mutex& CudaCaptureMutex();

// Waits for all work on the current CUDA device (a CUDA graph replay may
// return before its kernels finish, on a stream the caller cannot name).
Status SynchronizeDevice();

// A host string tensor of `t.shape` holding `t.strings`, allocated by
// `allocator`. Every element keeps all of its bytes, NUL bytes and non-UTF-8
// bytes included: ORT is handed each element's length, never a C string.
// REQUIRES: t.dtype == DataType::kString. Throws Ort::Exception.
Ort::Value StringTensor(OrtAllocator* allocator, const Tensor& t);

// Whether `info` is CPU memory (pinned memory counts as CPU).
bool OnCpu(const Ort::ConstMemoryInfo& info);

// The run options of a run of `session` that neither captures nor replays a
// CUDA graph (PlainRunGraphAnnotation), at the session's run log severity.
Ort::RunOptions PlainRunOptions(const Session& session);

// Adds ORT's arena shrinkage for `session`'s device to `options`
// (memory.enable_memory_arena_shrinkage: "gpu:<device_id>" on CUDA, "cpu:0"
// on the CPU): after the run, the arena gives back every chunk left free.
void ShrinkArenaAfterRun(Ort::RunOptions& options, const Session& session);

// A host copy of the tensor `v` (in CPU or device memory), named `name`.
// Unimplemented for sequences and maps; Internal for a value ORT left
// empty (no type, no data), which a run that replays a captured CUDA graph
// returns for every output not bound to it.
Expected<Tensor> ToHost(const std::string& name, const Ort::Value& v);

}  // namespace ortgpu::ort_internal
