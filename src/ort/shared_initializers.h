// SharedInitializers: one copy of a model's weights (its graph's
// initializers) in the memory of one device, offered to every ORT session of
// that model on that device, so N sessions hold the weights once instead of
// N times (ORT's AddInitializer; on the CPU also one prepacked-weights
// container, CreateSessionWithPrepackedWeightsContainer).
//
// The store parses the ONNX file itself (raw_data, the typed *_data fields,
// and external data files next to the model) and owns every buffer: host
// memory on the CPU, device memory it allocates through the CUDA runtime
// the CUDA EP loaded on a GPU (ORT uses a user initializer only when the
// user owns its memory). Initializers it cannot share (strings, empty
// tensors, element types ortgpu does not read) are left to each session and
// listed in skipped().
//
// Lifetime: a Session made with SessionOptions::shared_initializers keeps
// the store alive (shared_ptr) until the ORT session is gone. ORT uses an
// offered value only if the optimised graph still has an initializer of
// that name planned on this device; Session reports what it used
// (Session::shared_initializer_use).
//
// Thread-safety: const methods may be called from any thread; Retain must
// not run while a session is being created with the store. The header keeps
// ORT's own headers out of its includers.
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ort/session_options.h"
#include "status/expected.h"

struct OrtValue;
struct OrtPrepackedWeightsContainer;

namespace ortgpu {

// Where a store keeps its copy.
struct WeightsDevice {
  // kCpu: host memory; kCuda (or kTensorRt): memory of GPU `device_id`.
  Provider provider = Provider::kCpu;
  int device_id = 0;
  bool on_gpu() const { return provider != Provider::kCpu; }
  // "the CPU", "GPU 0".
  std::string Describe() const;
};

// Device memory for a store on a GPU: the real one is the CUDA runtime the
// CUDA EP loaded (CudaWeightMemory); tests substitute host memory.
// Implementations are thread-safe.
class WeightMemory {
 public:
  virtual ~WeightMemory() = default;
  virtual Expected<void*> Allocate(int device_id, size_t bytes) = 0;
  virtual Status CopyFromHost(int device_id, void* dst, const void* src, size_t bytes) = 0;
  virtual void Free(int device_id, void* ptr) = 0;
};
WeightMemory& CudaWeightMemory();

class SharedInitializers {
 public:
  // Reads the initializers of the ONNX file `model_path` into `device`'s
  // memory (`memory` for a GPU; null: CudaWeightMemory()). Errors name the
  // initializer and the file: a missing or short external data file is
  // NotFound / InvalidArgument saying where it was looked for, a GPU allocation
  // that fails is ResourceExhausted or Unavailable (no CUDA runtime), a
  // file that is no ONNX model Unimplemented (ORT's own load says why).
  static Expected<std::shared_ptr<SharedInitializers>> Load(const std::string& model_path,
                                                            const WeightsDevice& device,
                                                            WeightMemory* memory = nullptr);
  ~SharedInitializers();
  SharedInitializers(const SharedInitializers&) = delete;
  SharedInitializers& operator=(const SharedInitializers&) = delete;

  const WeightsDevice& device() const;
  // Initializers offered to sessions, and their bytes in the device's memory.
  size_t count() const;
  int64_t bytes() const;
  // Initializers left to each session, each "name (why)".
  const std::vector<std::string>& skipped() const;
  // Bytes of the offered initializers among `names`.
  int64_t BytesOf(const std::vector<std::string>& names) const;
  // Offers only `names` to sessions created from now on and frees the
  // others' memory: what the first session did not use (ORT's optimiser
  // replaced it, or planned it on another device) no other session of the
  // same options will use either.
  // REQUIRES: no session is being created with this store meanwhile.
  void Retain(const std::set<std::string>& names);

  // For src/ort/ only: the offered (name, value) pairs, and the CPU's
  // prepacked-weights container (null on a GPU).
  std::vector<std::pair<std::string, const OrtValue*>> Offered() const;
  OrtPrepackedWeightsContainer* prepacked() const;

 private:
  struct Impl;
  explicit SharedInitializers(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ortgpu
