// SharedMemoryRegions: perf_analyzer's --shared-memory system|cuda for
// `ortgpu perf`. Before the load, the input tensors are written once into a
// region of this process's memory, a second region is made for the outputs
// (--output-shared-memory-size bytes per output), and both are registered
// with the server (Triton's system / CUDA shared memory extensions, over
// HTTP); every request then names the regions instead of carrying tensor
// bytes (SharedMemoryPlan, request_builder.h). As in perf_analyzer, all
// requests read the same input bytes and write into the same output bytes.
//
// system: POSIX shared memory (shm_open "/<prefix>_input" and
// "/<prefix>_output"), registered by key. cuda: device memory on GPU
// `device` allocated through gpu::CudaIpc (libcuda's driver API; a fake in
// tests), the inputs copied in once, registered by IPC handle.
//
// Ownership: the object owns the regions; its destructor unregisters them
// (best effort) and frees them. Thread-safety: none needed (made and
// destroyed by perf's main thread; the memory is only read and written by
// the server).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gpu/cuda_ipc.h"
#include "ort/tensor.h"
#include "perf/http_fetch.h"
#include "perf/request_builder.h"
#include "status/expected.h"

namespace ortgpu::perf {

enum class SharedMemoryMode { kNone, kSystem, kCuda };
// "none", "system", "cuda" (perf_analyzer's spellings).
Expected<SharedMemoryMode> ParseSharedMemoryMode(const std::string& text);

struct SharedMemoryOptions {
  SharedMemoryMode mode = SharedMemoryMode::kNone;
  // Bytes of the region part for each output (perf_analyzer's
  // --output-shared-memory-size default).
  uint64_t output_bytes = 102400;
  int device = 0;  // the GPU of a CUDA region
  // Region names and shm keys start with this ("" : ortgpu_perf_<pid>).
  std::string prefix;
  // CUDA regions; null: libcuda's driver API.
  std::shared_ptr<gpu::CudaIpc> cuda;
};

// POSTs a registration body to the server; returns its answer.
using RegisterPost = std::function<Expected<FetchResult>(const std::string& target, const std::string& json_body)>;

class SharedMemoryRegions {
 public:
  // Makes and registers the two regions for `inputs` and `output_count`
  // outputs. Errors say what failed and what to do: a server without the
  // extension (404/400, with its message), no GPU or driver (cuda), no
  // room; nothing stays registered or allocated after an error.
  // REQUIRES: options.mode is not kNone; every input is a fixed-size tensor.
  static Expected<std::unique_ptr<SharedMemoryRegions>> Create(const SharedMemoryOptions& options,
                                                               const std::vector<Tensor>& inputs, size_t output_count,
                                                               RegisterPost post);
  ~SharedMemoryRegions();
  SharedMemoryRegions(const SharedMemoryRegions&) = delete;
  SharedMemoryRegions& operator=(const SharedMemoryRegions&) = delete;

  const SharedMemoryPlan& plan() const { return plan_; }
  // The output region's current bytes (host copy), for checks.
  Expected<std::string> OutputBytes() const;

 private:
  struct Region {
    std::string name;
    uint64_t bytes = 0;
    void* host = nullptr;  // system: the mapping
    uint64_t device_address = 0;  // cuda
    bool registered = false;
  };
  SharedMemoryRegions() = default;
  Status Make(Region& r, uint64_t bytes);
  Status Register(Region& r);
  void Release(Region& r);

  SharedMemoryOptions options_;
  RegisterPost post_;
  Region input_;
  Region output_;
  SharedMemoryPlan plan_;
};

}  // namespace ortgpu::perf
