// InputStaging: a batch's inputs assembled in host memory that an instance
// owns and reuses, and the session run on them with no further host copy.
//
// One buffer per model input, sized once for the largest batch the instance
// runs (`max_rows` rows of the input's per-row shape). On CUDA the buffers
// are page-locked, taken from the CUDA EP's own "CudaPinned" allocator, so
// ORT's copy to the GPU is a single DMA (a 19 MB batch: 0.36 ms pinned
// against 1.2 ms pageable on the H200); elsewhere, or when the EP cannot give
// pinned memory, ordinary memory from ORT's CPU allocator. A run views the
// first `rows` rows of each buffer as a tensor of that shape, so any batch
// size up to max_rows runs from the same buffers and nothing proportional to
// the payload is allocated per batch.
//
// For batches whose rows are already in device memory (CUDA shared memory)
// a GPU instance also keeps device buffers of the same size
// (EnsureDeviceBuffers, made on the first such batch, from a DeviceMemory):
// the rows are copied into them device to device, host rows of the batch
// from the host buffers with one copy each, and RunFrom(kDevice) hands them
// to ORT as device-resident inputs, so ORT copies no input.
//
// Ownership: the staging keeps a pointer to its Session, which must outlive
// it. Thread-safety: none; one instance worker owns and uses it (the buffers
// are rewritten by every batch).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ort/device_memory.h"
#include "ort/session.h"
#include "ort/tensor.h"
#include "status/expected.h"

namespace ortgpu {

// One staged input: its name, type and shape without the batch dimension.
struct StagedInputSpec {
  std::string name;
  DataType dtype = DataType::kUndefined;
  std::vector<int64_t> row_shape;  // every dim >= 0
};

class InputStaging {
 public:
  ~InputStaging();
  InputStaging(const InputStaging&) = delete;
  InputStaging& operator=(const InputStaging&) = delete;

  // Allocates the buffers. InvalidArgument for a string input (strings are
  // not staged: run those models on Tensors) or a negative dim;
  // ResourceExhausted when the memory cannot be had.
  // REQUIRES: max_rows >= 1; `session` outlives the staging.
  static Expected<std::unique_ptr<InputStaging>> Create(const Session& session, std::vector<StagedInputSpec> inputs,
                                                        int64_t max_rows);

  size_t input_count() const { return specs_.size(); }
  const StagedInputSpec& spec(size_t i) const { return specs_[i]; }
  // Bytes of one row of input i.
  size_t row_bytes(size_t i) const { return row_bytes_[i]; }
  int64_t max_rows() const { return max_rows_; }
  // The start of input i's buffer (max_rows * row_bytes(i) bytes).
  uint8_t* data(size_t i) { return buffers_[i]; }
  const uint8_t* data(size_t i) const { return buffers_[i]; }
  // True when the buffers are page-locked (CUDA pinned) memory.
  bool pinned() const { return pinned_; }

  // Makes the device buffers (once; later calls with the same memory and
  // device do nothing). Errors: Allocate's.
  Status EnsureDeviceBuffers(std::shared_ptr<DeviceMemory> memory, int device);
  bool has_device_buffers() const { return !device_buffers_.empty(); }
  // The device address of input i's device buffer (max_rows * row_bytes(i)).
  // REQUIRES: has_device_buffers().
  uint64_t device_data(size_t i) const { return device_buffers_[i]; }

  // Runs `session` (the one given to Create, or another Session of the same
  // model on the same device) on the first `rows` rows of every buffer, the
  // input i shaped [rows, row_shape...] unless `shapes` gives it another
  // shape of the same element count (config.pbtxt's reshape). Returns the
  // outputs named in `outputs` (empty: every output) as host Tensors, in
  // model order. ORT copies each output once, into host memory from its CPU
  // arena, and the tensors borrow that memory (TensorBytes) rather than
  // copying it again.
  // REQUIRES: 1 <= rows <= max_rows; shapes empty or one per input.
  //
  // The outputs named in `on_device` (a subset of `outputs`) are left where
  // the session made them (device memory on CUDA; host memory on the CPU)
  // and returned as Tensors with a DeviceView that owns the ORT value.
  //
  // `after` kShrink gives the session's arena back every chunk the run left
  // free (a batch larger than the planned ones, serve's arena_shrinkage).
  Expected<std::vector<Tensor>> Run(const Session& session, int64_t rows,
                                    const std::vector<std::vector<int64_t>>& shapes = {},
                                    const std::vector<std::string>& outputs = {},
                                    const std::vector<std::string>& on_device = {},
                                    ArenaAfterRun after = ArenaAfterRun::kKeep) const;
  // As Run, from the device buffers (device-resident inputs, on the GPU the
  // device buffers are on). REQUIRES: has_device_buffers().
  Expected<std::vector<Tensor>> RunFromDevice(const Session& session, int64_t rows,
                                              const std::vector<std::vector<int64_t>>& shapes,
                                              const std::vector<std::string>& outputs,
                                              const std::vector<std::string>& on_device = {},
                                              ArenaAfterRun after = ArenaAfterRun::kKeep) const;

 private:
  struct Impl;
  InputStaging() = default;
  Expected<std::vector<Tensor>> RunOn(const Session& session, int64_t rows,
                                      const std::vector<std::vector<int64_t>>& shapes,
                                      const std::vector<std::string>& outputs, const std::vector<std::string>& on_device,
                                      bool from_device, ArenaAfterRun after) const;
  std::vector<StagedInputSpec> specs_;
  std::vector<size_t> row_bytes_;
  std::vector<uint8_t*> buffers_;
  std::shared_ptr<DeviceMemory> device_memory_;  // set with device_buffers_
  int device_ = -1;
  std::vector<uint64_t> device_buffers_;
  int64_t max_rows_ = 0;
  bool pinned_ = false;
  std::unique_ptr<Impl> impl_;  // the ORT values that own the buffers
};

}  // namespace ortgpu
