// GPU memory in `ortgpu tune` (issue 28): the --max-gpu-memory limit (bytes,
// binary or decimal units, or a percentage of the GPU's total read through
// NVML) and the estimate of what a candidate needs, whose inputs come from
// the model (ModelTraits::weight_bytes, activation_bytes_per_row; the rule
// itself is EstimatedMemoryBytes in candidates.h). The estimate is labelled
// as one wherever it is shown: it stands until the memory plan (issue 27)
// measures what a configuration takes. Pure functions except
// ResolveGpuMemoryLimit, which asks NVML; thread-compatible.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpu/nvml.h"
#include "ort/session.h"
#include "ort/session_options.h"
#include "status/expected.h"
#include "tune/candidates.h"

namespace ortgpu::tune {

// --max-gpu-memory as written: bytes ("8000000000", "64GiB", "80GB", "512MiB")
// or a percentage of the GPU's total ("90%").
struct GpuMemoryLimitSpec {
  std::optional<int64_t> bytes;
  std::optional<double> percent;  // (0, 100]
  std::string text;               // as the user wrote it
};

// Units: none or B; KiB, MiB, GiB, TiB (powers of 1024); KB, MB, GB, TB
// (powers of 1000); a decimal number before them ("1.5GiB"). InvalidArgument
// names the flag and the accepted forms.
Expected<GpuMemoryLimitSpec> ParseGpuMemoryLimit(std::string_view text);

// The limit the rules use, and how it was found, for the report.
struct GpuMemoryLimit {
  std::optional<int64_t> bytes;  // unset: no memory rule
  // "--max-gpu-memory 90% of GPU 0 (NVIDIA H200, 139.8 GiB): 125.8 GiB";
  // "" when no limit was asked for.
  std::string source;
  // Set when the flag does not apply (the CPU provider): said, not an error.
  std::string note;
};

// Resolves `spec` (nullopt: no flag) for `provider`. On the CPU provider the
// flag does not apply: no limit, and a note says so. A percentage reads
// device 0's total memory through `nvml` (the real NVML when null); NVML
// missing is an InvalidArgument that says to give bytes instead.
Expected<GpuMemoryLimit> ResolveGpuMemoryLimit(const std::optional<GpuMemoryLimitSpec>& spec, Provider provider,
                                               gpu::Nvml* nvml);

// ParseGpuMemoryLimit of `flag` ("" : no flag), then ResolveGpuMemoryLimit.
Expected<GpuMemoryLimit> GpuMemoryLimitFromFlag(const std::string& flag, Provider provider, gpu::Nvml* nvml);

// The estimate's inputs from the model: weights, the model file's size
// (external data files not counted); activations per batch row, the bytes of
// every input and output per row (a variable dimension other than the batch
// counted as 1). Intermediate tensors are not counted: the estimate is a
// floor until issue 27's memory plan measures it.
void EstimateModelMemory(const std::string& model_file, const std::vector<TensorInfo>& inputs,
                         const std::vector<TensorInfo>& outputs, ModelTraits& traits);

// What the estimate counts, for the report.
inline constexpr const char* kMemoryEstimateMeaning =
    "estimate: the model file's size per instance, plus every input and output per batch row per worker; "
    "intermediate activations, the CUDA context and cuDNN/cuBLAS workspaces are not counted (a floor until the "
    "memory plan of issue 27 measures them)";

}  // namespace ortgpu::tune
