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
#include "ort/random_inputs.h"
#include "ort/session.h"

namespace ortgpu::doctor {

struct ObserveOptions {
  int warmup_runs = 3;
  int timed_runs = 20;
  int64_t builtin_batch = 16;
  int device_id = 0;
  // --cuda-option KEY=VALUE: CUDA EP options of every CUDA session doctor
  // creates (use_tf32=0 for true float32; host.tf32 reports it). device_id
  // comes from `device_id`.
  std::map<std::string, std::string> cuda_options;
  // --shape NAME:DIMS: an input's full shape or a symbolic dim's size
  // (ort/random_inputs.h, the grammar bench shares).
  std::map<std::string, std::vector<int64_t>> shapes;
  // --int-range NAME:LO:HI: integer values of input NAME in [LO, HI);
  // other integer inputs get 0 or 1.
  std::map<std::string, IntRange> int_ranges;
  // --input NAME=FILE, read by the command: the tensor input NAME gets.
  std::map<std::string, Tensor> inputs;
  // Where ORT writes profiles (deleted after parsing).
  std::string temp_dir = "/tmp";
  // Reads this process's GPU memory use (NVML); may be empty.
  std::function<std::optional<uint64_t>()> gpu_memory;
  // Called from one extra thread while the built-in model's timed CUDA runs
  // run (first when they start, then every `sample_period_ms`), to read what
  // limits the GPU's clocks under load (checks_health.h); may be empty. Never
  // called concurrently with itself or with `gpu_memory`.
  std::function<void()> sample_under_load;
  int sample_period_ms = 5;
  // With a sampler, the runs go on (untimed) until this much time passed
  // since the timed runs began, so the clocks ramp up and several samples
  // are taken.
  double load_window_ms = 150;
};

struct RuntimeObservation {
  ProviderObservation provider;
  EndToEndObservation end_to_end;
};

// Layers 5 and 6 on the built-in model. `gpu_expected`: earlier layers found
// a usable GPU; when false no CUDA session is attempted.
RuntimeObservation ObserveRuntime(bool gpu_expected, const ObserveOptions& options);

// A TensorRT session on the built-in model: its creation time (the engine
// build) and one run. `error` is "" when both worked.
struct TensorRtRun {
  std::string error;
  double session_ms = 0;
  double run_ms = 0;
};
TensorRtRun ObserveTensorRtSession(const ObserveOptions& options);

// Layer 7 on a user's model. `cuda`: try the GPU too.
ModelObservation ObserveModel(const std::string& path, bool cuda, const ObserveOptions& options);

// Inputs for a session: the tensors of `options.inputs`, else shapes from
// `options.shapes` (names the model lacks are ignored, since the flags serve
// several models; those it has are checked as bench checks them) with other
// symbolic dims 1, and values in safe ranges (integers in their
// --int-range, else 0 or 1 so index inputs stay in range; floats in
// [0, 1)). InvalidArgument naming the flag when one does not fit. Fills
// `described` and `defaulted` for reports.
Expected<std::vector<Tensor>> MakeInputs(const Session& session, const ObserveOptions& options,
                                         std::vector<std::string>* described, std::vector<std::string>* defaulted);

}  // namespace ortgpu::doctor
