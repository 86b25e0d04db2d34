// Compatibility rules between ONNX Runtime's CUDA EP, the CUDA runtime,
// cuDNN, the NVIDIA driver and the GPU architecture, kept as data tables in
// compatibility.cc (each row cites its source) and queried by pure
// functions. doctor's layers 2 and 4 turn the results into findings.
//
// Everything here is a pure function of its arguments: thread-safe, no I/O.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace ortgpu::gpu {

enum class CompatVerdict {
  kOk,            // supported as is
  kDegraded,      // works, with a cost the user should know (PTX JIT, minor-version compat)
  kIncompatible,  // will not work
  kUnknown,       // not covered by the tables (a newer CUDA, an unparsable version)
};

struct CompatResult {
  CompatVerdict verdict = CompatVerdict::kUnknown;
  std::string message;   // one sentence for a human: what holds and why
  std::string required;  // the requirement, e.g. ">= 580.65.06"; empty when none
  std::string source;    // where the rule comes from
  bool ok() const { return verdict == CompatVerdict::kOk || verdict == CompatVerdict::kDegraded; }
};

// "580.159.03" -> {580, 159, 3}; nullopt when not dotted decimal numbers.
std::optional<std::vector<int>> ParseVersion(const std::string& version);
// Numeric, part by part; a missing part counts as 0 ("580" == "580.0").
// REQUIRES: both parse (unparsable strings compare as equal).
int CompareVersions(const std::string& a, const std::string& b);

// Whether driver `driver_version` runs a CUDA `cuda_major.cuda_minor`
// runtime: kOk at or above the toolkit's own driver (CUDA Toolkit release
// notes, Table 3); kDegraded when only CUDA minor-version compatibility
// holds (Table 2: 13.x >= 580, 12.x >= 525, 11.x >= 450); else kIncompatible.
CompatResult CheckDriverForCuda(const std::string& driver_version, int cuda_major, int cuda_minor);

// Whether the driver knows GPU architecture `cc` (90 for 9.0).
CompatResult CheckDriverForArch(const std::string& driver_version, int cc);

// Whether a CUDA `cuda_major` runtime still supports architecture `cc`
// (CUDA 13 dropped Maxwell, Pascal and Volta: cc < 7.5).
CompatResult CheckCudaSupportsArch(int cuda_major, int cc);

// "Hopper" for 90, "Ada Lovelace" for 89, "Blackwell" for 100 and 120;
// "unknown architecture" otherwise.
std::string ArchName(int cc);
// "9.0" for 90, "12.0" for 120.
std::string FormatComputeCapability(int cc);

// One official build of ONNX Runtime's CUDA EP.
struct EpBuild {
  int cuda_major = 0;
  int cudnn_major = 0;
  std::string package;  // "onnxruntime-gpu (PyPI default)", "..._cuda13 archives"
  std::string source;
};
struct EpBuildResult {
  CompatVerdict verdict = CompatVerdict::kUnknown;  // kOk when the version is in the table
  std::vector<EpBuild> builds;  // every official flavour; the default one first
  std::string message;
};
// The CUDA and cuDNN majors that ONNX Runtime `ort_version` ("1.29.0") was
// published for. For 1.24 and later both CUDA 12 and CUDA 13 builds exist:
// only the EP's own ELF NEEDED list (libcudart.so.13) tells which one is here.
EpBuildResult EpBuildFor(const std::string& ort_version);

// Whether a CUDA EP whose fatbins hold machine code for `cubin_archs` and PTX
// for `ptx_archs` (both as 75, 90, 120 ...) can run on a GPU of `device_cc`:
// kOk for an exact cubin or one of the same major and lower minor (CUDA
// binary compatibility); kDegraded when only PTX <= device_cc exists (the
// driver JIT-compiles it at first load); kIncompatible when kernels will be
// missing (CUDA_ERROR_NO_BINARY_FOR_GPU at run time).
CompatResult CheckKernelsForArch(const std::set<int>& cubin_archs, const std::set<int>& ptx_archs,
                                 int device_cc);

// cuDNN is built per CUDA major (cudnn 9 "for CUDA 12" / "for CUDA 13"): its
// cudnnGetCudartVersion() major must equal the loaded runtime's major.
// `cudnn_cudart_version` and `runtime_version` are 12080 / 13000 style.
CompatResult CheckCudnnForCuda(int cudnn_cudart_version, int runtime_version);

}  // namespace ortgpu::gpu
