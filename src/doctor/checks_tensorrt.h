// doctor's TensorRT check (issue #13), part of layer 5: when ONNX Runtime's
// TensorRT execution provider library is installed next to the CUDA one,
// whether the TensorRT libraries it was linked against (its ELF NEEDED list:
// libnvinfer.so.10 ...) are found, their versions against the major the EP
// was built for, and whether a TensorRT session runs the built-in check
// model. Without the EP library it is one `skip` saying so. TensorRT is
// optional for ortgpu: no finding here has gpu = true. Pure; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "doctor/finding.h"

namespace ortgpu::doctor {

// One TensorRT library the EP needs.
struct TensorRtLibrary {
  std::string soname;   // "libnvinfer.so.10" (from the EP's NEEDED list)
  std::string path;     // where the loader would find it; "" when it would not
  std::string version;  // "10.9.0" from the file name; "" when unknown
  std::vector<std::string> other_copies;  // copies the loader would not pick ("path (version)")
};

struct TensorRtObservation {
  std::string ep_library;       // libonnxruntime_providers_tensorrt.so looked for here
  bool ep_present = false;
  std::string ep_error;         // its ELF could not be read
  std::vector<TensorRtLibrary> libraries;
  int cuda_major = 0;           // from its NEEDED libcudart.so.N; 0 when absent
  // The session on the built-in model: not attempted (with the reason), or
  // its result.
  bool session_attempted = false;
  std::string session_skip_reason;
  std::string session_error;    // "" when the session was created and ran
  double session_ms = 0;        // creation, including the engine build
  double run_ms = 0;            // the first run
};

void EvaluateTensorRt(const TensorRtObservation& obs, Report& report);

// The TensorRT sonames in an EP's NEEDED list (libnvinfer*, libnvonnxparser*).
std::vector<std::string> TensorRtSonames(const std::vector<std::string>& needed);

}  // namespace ortgpu::doctor
