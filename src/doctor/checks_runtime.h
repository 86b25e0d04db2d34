// doctor layers 5 (execution provider), 6 (end to end) and 7 (the user's
// models): verdicts drawn from observations.
//
// Observations are plain data gathered by doctor/observe.h from the real ORT
// (or written by hand in tests), so every verdict here is testable without a
// GPU: "the EP failed to load libcublasLt.so.13", "CUDA no faster than the
// CPU", "a Conv fell back to the CPU". Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "doctor/finding.h"
#include "doctor/ort_log.h"
#include "doctor/placement.h"
#include "ort/accuracy.h"

namespace ortgpu::doctor {

struct ProviderObservation {
  std::string ort_version;
  std::string ort_library;                  // path of libonnxruntime
  std::vector<std::string> available_providers;
  std::vector<std::string> ep_devices;      // ORT's EP devices (Env::GetEpDevices)
  std::string ep_library;                   // libonnxruntime_providers_cuda.so path, "" if absent
  bool gpu_expected = false;                // layers 1-4 saw a usable GPU
  bool attempted = false;                   // a CUDA session was tried
  std::string skip_reason;                  // why not, when not
  std::string session_error;                // "" when the CUDA session was created
  OrtLogFacts log;                          // what ORT logged meanwhile
  double session_ms = 0;
};

// Adds provider.* findings. Returns true when a CUDA session works.
bool EvaluateProvider(const ProviderObservation& obs, Report& report);

struct RunTiming {
  bool ok = false;
  std::string error;
  double first_run_ms = 0;
  double median_ms = 0;  // of the timed runs after warm-up
  int runs = 0;
};

struct EndToEndObservation {
  std::string model_label = "built-in check model (2 Conv + 2 MatMul, batch 16, 3x64x64)";
  RunTiming cpu;
  std::optional<RunTiming> cuda;         // nullopt: not attempted (no GPU)
  std::string skip_reason;               // why cuda was not attempted
  double max_abs_diff = 0;               // CUDA vs CPU outputs
  double max_rel_diff = 0;               // as a share of the output's range
  double tolerance = Tolerance{}.rtol;   // on max_rel_diff (ort/accuracy.h)
  std::string agreement_note;            // the first element past tolerance
  // Outputs compared as sets of rows (detections after NMS: ort/row_sets.h),
  // one line per group, passed or not.
  std::vector<std::string> row_set_notes;
  std::optional<uint64_t> gpu_memory_bytes;  // this process, from NVML
  std::optional<PlacementSummary> placement;  // of the CUDA run
};

void EvaluateEndToEnd(const EndToEndObservation& obs, Report& report);

struct ModelObservation {
  std::string path;
  std::string load_error;               // CPU load failed (corrupt, missing ...)
  std::vector<std::string> input_shapes;  // "input_ids: int64 1x128 (seq=128 from --shape)"
  std::vector<std::string> defaulted_dims;  // symbolic dims given the default
  std::vector<std::string> input_names;     // its inputs and symbolic dims (to check flag names)
  std::string input_error;                  // a --shape, --input or --int-range that does not fit it
  EndToEndObservation run;              // model_label is the path
};

// `index` numbers models when several are given: ids are model.<index>.*.
void EvaluateModel(const ModelObservation& obs, int index, Report& report);

}  // namespace ortgpu::doctor
