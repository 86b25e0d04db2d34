// Observation of the real ONNX Runtime for doctor layers 5-7: creates the
// sessions, runs them, times them and profiles node placement, and returns
// plain observations for doctor/checks_runtime.h to judge. This is the only
// doctor code that runs models; it holds no state between calls.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "doctor/checks_runtime.h"
#include "ort/session.h"

namespace ortgpu::doctor {

struct ObserveOptions {
  int warmup_runs = 3;
  int timed_runs = 20;
  int64_t builtin_batch = 16;
  int device_id = 0;
  // Full input shapes by input name, from --shape NAME:DIMS.
  std::map<std::string, std::vector<int64_t>> shapes;
  // Where ORT writes profiles (deleted after parsing).
  std::string temp_dir = "/tmp";
  // Reads this process's GPU memory use (NVML); may be empty.
  std::function<std::optional<uint64_t>()> gpu_memory;
};

struct RuntimeObservation {
  ProviderObservation provider;
  EndToEndObservation end_to_end;
};

// Layers 5 and 6 on the built-in model. `gpu_expected`: earlier layers found
// a usable GPU; when false no CUDA session is attempted.
RuntimeObservation ObserveRuntime(bool gpu_expected, const ObserveOptions& options);

// Layer 7 on a user's model. `cuda`: try the GPU too.
ModelObservation ObserveModel(const std::string& path, bool cuda, const ObserveOptions& options);

// Inputs for a session: symbolic dims from `shapes` (whole shapes by input
// name; names the model lacks are ignored, since --shape serves several
// models) or 1; values in safe ranges (integers 0 or 1, so index inputs stay in
// range; floats in [0, 1)). Fills `described` and `defaulted` for reports.
Expected<std::vector<Tensor>> MakeInputs(const Session& session,
                                         const std::map<std::string, std::vector<int64_t>>& shapes,
                                         int64_t default_dim, std::vector<std::string>* described,
                                         std::vector<std::string>* defaulted);

}  // namespace ortgpu::doctor
