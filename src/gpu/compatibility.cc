#include "gpu/compatibility.h"

#include <algorithm>
#include <cstdio>

#include "gpu/cuda_driver.h"

namespace ortgpu::gpu {
namespace {

constexpr const char* kCudaReleaseNotes =
    "NVIDIA CUDA Toolkit Release Notes, 2.2 CUDA Driver, Table 3 'CUDA Toolkit and "
    "Corresponding Driver Versions' (docs.nvidia.com/cuda/cuda-toolkit-release-notes)";
constexpr const char* kCudaMinorCompat =
    "NVIDIA CUDA Toolkit Release Notes, Table 2 'CUDA Toolkit and Minimum Required Driver "
    "Version for CUDA Minor Version Compatibility'; docs.nvidia.com/deploy/cuda-compatibility";

// (b) CUDA toolkit/runtime -> the Linux x86_64 driver it ships with (Table 3).
// One row per minor version: its GA driver. Updates of the same minor raise
// the bundled driver, but the runtime of a minor release runs on its GA driver.
struct ToolkitDriverRow {
  int major;
  int minor;
  const char* min_driver;
};
constexpr ToolkitDriverRow kToolkitDrivers[] = {
    {13, 2, "595.45.04"},  {13, 1, "590.44.01"},  {13, 0, "580.65.06"},
    {12, 9, "575.51.03"},  {12, 8, "570.26"},     {12, 6, "560.28.03"},
    {12, 5, "555.42.02"},  {12, 4, "550.54.14"},  {12, 3, "545.23.06"},
    {12, 2, "535.54.03"},  {12, 1, "530.30.02"},  {12, 0, "525.60.13"},
    {11, 8, "520.61.05"},  {11, 7, "515.43.04"},  {11, 6, "510.39.01"},
    {11, 5, "495.29.05"},  {11, 4, "470.42.01"},  {11, 3, "465.19.01"},
    {11, 2, "460.27.03"},  {11, 1, "455.23"},     {11, 0, "450.36.06"},
    {10, 2, "440.33"},     {10, 1, "418.39"},     {10, 0, "410.48"},
};

// Table 2: the lowest driver of each major's minor-version-compatibility
// range. 12.x lists ">= 525" (525.60.13 being the 12.0 GA driver); 11.x's
// footnote names 450.80.02.
struct MinorCompatRow {
  int major;
  const char* min_driver;
};
constexpr MinorCompatRow kMinorCompat[] = {{13, "580"}, {12, "525.60.13"}, {11, "450.80.02"}};

// (c) Compute capability -> architecture and the first driver branch that
// supports it: the driver of the first CUDA toolkit that targets the sm
// (Table 3 above plus each toolkit's "new features" section).
struct ArchRow {
  int cc;
  const char* name;
  const char* examples;
  const char* first_cuda;  // first toolkit with the sm target
  const char* min_driver;  // driver branch of that toolkit
};
constexpr ArchRow kArchs[] = {
    {50, "Maxwell", "GTX 750", "6.0", ""},
    {52, "Maxwell", "GTX 980, Tesla M40", "6.5", ""},
    {53, "Maxwell", "Jetson TX1", "7.0", ""},
    {60, "Pascal", "Tesla P100", "8.0", "367.48"},
    {61, "Pascal", "GTX 1080, Tesla P4", "8.0", "367.48"},
    {62, "Pascal", "Jetson TX2", "8.0", ""},
    {70, "Volta", "Tesla V100", "9.0", "384.81"},
    {72, "Volta", "Jetson AGX Xavier", "10.0", ""},
    {75, "Turing", "T4, RTX 2080", "10.0", "410.48"},
    {80, "Ampere", "A100, A30", "11.0", "450.36.06"},
    {86, "Ampere", "RTX 3090, A10, A40", "11.1", "455.23"},
    {87, "Ampere", "Jetson AGX Orin", "11.4", ""},  // Jetson: driver ships with L4T
    {89, "Ada Lovelace", "RTX 4090, L4, L40S", "11.8", "520"},
    {90, "Hopper", "H100, H200, GH200", "11.8", "520"},
    {100, "Blackwell", "B200, GB200", "12.8", "570"},
    {103, "Blackwell", "B300, GB300", "12.9", "575"},
    {110, "Blackwell", "Jetson Thor", "13.0", "580"},
    {120, "Blackwell", "RTX 5090, RTX PRO 6000 Blackwell", "12.8", "570"},
    {121, "Blackwell", "DGX Spark (GB10)", "12.9", "575"},
};
constexpr const char* kArchSource =
    "CUDA C++ Programming Guide, 'Compute Capabilities'; CUDA 11.8 release notes (sm_89, sm_90), "
    "12.8 (sm_100, sm_120), 12.9 (sm_103, sm_121), 13.0 (sm_110); drivers from Table 3";

// Lowest compute capability each CUDA major still compiles for.
struct ArchFloorRow {
  int cuda_major;
  int min_cc;
  const char* dropped;
};
constexpr ArchFloorRow kArchFloors[] = {
    {13, 75, "CUDA 13.0 removed Maxwell, Pascal and Volta (sm_50 to sm_72)"},
    {12, 50, "CUDA 12.0 removed Kepler (sm_35, sm_37)"},
    {11, 35, "CUDA 11.0 removed sm_30"},
};

// (a) ONNX Runtime -> the CUDA/cuDNN majors of its official CUDA EP builds.
// Each row cites where it comes from: mostly a row of the 'Requirements'
// tables (CUDA 12.x, CUDA 11.x) of ONNX Runtime's CUDA EP page; the CUDA 13
// rows come from the packages themselves, since that page has no CUDA 13
// table.
struct OrtRow {
  const char* first;  // inclusive
  const char* last;   // inclusive; patch 999 = any patch
  int cuda_major;
  int cudnn_major;
  const char* package;
  const char* source;
};
#define ORT_REQUIREMENTS "onnxruntime.ai/docs/execution-providers/CUDA-ExecutionProvider.html#requirements, "
constexpr OrtRow kOrtBuilds[] = {
    // Listed in order of preference within a version: the default build first.
    {"1.29.0", "1.29.999", 13, 9, "npm onnxruntime CUDA EP used by ortgpu (CUDA 13 build)",
     "npm com.github.asus4.onnxruntime.linux-x64-gpu@0.4.9 (README: 'ONNX Runtime: 1.29.0'): its "
     "Plugins/Linux/x64/libonnxruntime_providers_cuda.so has ELF NEEDED libcudart.so.13, libcublasLt.so.13, "
     "libcublas.so.13 and loads libcudnn.so.9 (readelf; run on the H200 in docs/doctor-h200.md)"},
    {"1.29.0", "1.29.999", 12, 9, "onnxruntime-gpu (PyPI default, CUDA 12 build)",
     ORT_REQUIREMENTS "note 'Starting with version 1.19, CUDA 12.x becomes the default version when "
     "distributing ONNX Runtime GPU packages in PyPI' (carried forward to 1.29; no 1.29 row on the page)"},
    {"1.24.0", "1.28.999", 12, 9, "onnxruntime-gpu (PyPI default, CUDA 12 build)",
     ORT_REQUIREMENTS "note 'Starting with version 1.19, CUDA 12.x becomes the default version' (carried "
     "forward; no row per release on the page)"},
    {"1.24.0", "1.28.999", 13, 9, "onnxruntime-linux-x64-gpu_cuda13 release archive",
     "github.com/microsoft/onnxruntime issue #27944 (CUDA 13 packages of 1.25: CUDA 13.1.1, cuDNN 9.17) and "
     "the CUDA 13 + cuDNN 9 GPU packages other projects ship for 1.24+ (darktable data/ort_gpu.json)"},
    {"1.19.0", "1.23.999", 12, 9, "onnxruntime-gpu (PyPI default since 1.19)",
     ORT_REQUIREMENTS "CUDA 12.x table, row '1.19.x | 12.x | 9.x | Available in pypi'"},
    {"1.19.0", "1.20.999", 11, 8, "CUDA 11.8 build (not on PyPI)",
     ORT_REQUIREMENTS "CUDA 11.x table, row '1.19.x | 11.8 | 8.x | Not available in pypi'"},
    {"1.18.1", "1.18.999", 11, 8, "onnxruntime-gpu (PyPI default, CUDA 11.8)",
     ORT_REQUIREMENTS "CUDA 11.x table, row '1.18.x | 11.8 | 8.x | Available in pypi'"},
    {"1.18.1", "1.18.999", 12, 9, "CUDA 12 build (cuDNN 9 required)",
     ORT_REQUIREMENTS "CUDA 12.x table, row '1.18.1 | 12.x | 9.x | cuDNN 9 is required'"},
    {"1.18.0", "1.18.0", 11, 8, "onnxruntime-gpu (PyPI default, CUDA 11.8)",
     ORT_REQUIREMENTS "CUDA 11.x table, row '1.18.x | 11.8 | 8.x'"},
    {"1.18.0", "1.18.0", 12, 8, "CUDA 12 build",
     ORT_REQUIREMENTS "CUDA 12.x table, row '1.18.0 | 12.x | 8.x | Java package is added'"},
    {"1.15.0", "1.17.999", 11, 8, "CUDA 11.8 build (default)",
     ORT_REQUIREMENTS "CUDA 11.x table, row '1.17 1.16 1.15 | 11.8 | 8.2.4 (Linux)'"},
    {"1.17.0", "1.17.999", 12, 8, "CUDA 12.2 build",
     ORT_REQUIREMENTS "CUDA 12.x table, row '1.17.x | 12.x | 8.x' (earlier page: '1.17 | 12.2 | 8.9.2.26')"},
    {"1.13.0", "1.14.999", 11, 8, "CUDA 11.6 build",
     ORT_REQUIREMENTS "row '1.14 1.13.1 1.13 | 11.6 | 8.2.4 (Linux)'"},
    {"1.9.0", "1.12.999", 11, 8, "CUDA 11.4 build",
     ORT_REQUIREMENTS "rows '1.12 1.11 | 11.4 | 8.2.4', '1.10 | 11.4 | 8.2.4', '1.9 | 11.4 | 8.2.4'"},
    {"1.7.0", "1.8.999", 11, 8, "CUDA 11.0.3 build",
     ORT_REQUIREMENTS "rows '1.8 | 11.0.3 | 8.0.4 (Linux)', '1.7 | 11.0.3 | 8.0.4 (Linux)'"},
    {"1.5.0", "1.6.999", 10, 8, "CUDA 10.2 build", ORT_REQUIREMENTS "row '1.5-1.6 | 10.2 | 8.0.3'"},
    {"1.2.0", "1.4.999", 10, 7, "CUDA 10.1 build", ORT_REQUIREMENTS "row '1.2-1.4 | 10.1 | 7.6.5'"},
    {"1.0.0", "1.1.999", 10, 7, "CUDA 10.0 build", ORT_REQUIREMENTS "row '1.0-1.1 | 10.0 | 7.6.4'"},
};
#undef ORT_REQUIREMENTS

std::string Cc(int cc) { return FormatComputeCapability(cc); }

const ArchRow* FindArch(int cc) {
  for (const auto& row : kArchs) {
    if (row.cc == cc) return &row;
  }
  return nullptr;
}

}  // namespace

std::optional<std::vector<int>> ParseVersion(const std::string& version) {
  std::vector<int> parts;
  size_t i = 0;
  if (version.empty()) return std::nullopt;
  while (i <= version.size()) {
    size_t j = version.find('.', i);
    if (j == std::string::npos) j = version.size();
    if (j == i) return std::nullopt;
    int value = 0;
    for (size_t k = i; k < j; ++k) {
      if (version[k] < '0' || version[k] > '9') return std::nullopt;
      value = value * 10 + (version[k] - '0');
      if (value > 1000000) return std::nullopt;
    }
    parts.push_back(value);
    i = j + 1;
  }
  return parts;
}

int CompareVersions(const std::string& a, const std::string& b) {
  auto pa = ParseVersion(a);
  auto pb = ParseVersion(b);
  if (!pa || !pb) return 0;
  const size_t n = std::max(pa->size(), pb->size());
  for (size_t i = 0; i < n; ++i) {
    const int x = i < pa->size() ? (*pa)[i] : 0;
    const int y = i < pb->size() ? (*pb)[i] : 0;
    if (x != y) return x < y ? -1 : 1;
  }
  return 0;
}

CompatResult CheckDriverForCuda(const std::string& driver_version, int cuda_major, int cuda_minor) {
  CompatResult r;
  r.source = kCudaReleaseNotes;
  for (const auto& row : kToolkitDrivers) {
    if (row.major == cuda_major && row.minor == cuda_minor) {
      r.source = std::string(kCudaReleaseNotes) + ", row 'CUDA " + std::to_string(row.major) + "." +
                 std::to_string(row.minor) + " GA: >= " + row.min_driver + "'";
    }
  }
  const std::string cuda = std::to_string(cuda_major) + "." + std::to_string(cuda_minor);
  if (!ParseVersion(driver_version)) {
    r.message = "driver version '" + driver_version + "' is not a dotted version number";
    return r;
  }
  const char* family_min = nullptr;
  for (const auto& row : kMinorCompat) {
    if (row.major == cuda_major) family_min = row.min_driver;
  }
  const ToolkitDriverRow* exact = nullptr;
  for (const auto& row : kToolkitDrivers) {
    if (row.major != cuda_major) continue;
    if (row.minor == cuda_minor) exact = &row;
  }
  if (exact == nullptr && family_min == nullptr) {
    r.message = "CUDA " + cuda + " is newer than ortgpu's driver table (CUDA 10.0 to 13.2)";
    return r;
  }
  if (exact != nullptr) {
    r.required = std::string(">= ") + exact->min_driver;
    if (CompareVersions(driver_version, exact->min_driver) >= 0) {
      r.verdict = CompatVerdict::kOk;
      r.message = "driver " + driver_version + " meets CUDA " + cuda + "'s requirement (" +
                  r.required + ")";
      return r;
    }
  }
  if (family_min != nullptr && CompareVersions(driver_version, family_min) >= 0) {
    r.verdict = exact != nullptr ? CompatVerdict::kDegraded : CompatVerdict::kOk;
    r.source = std::string(kCudaMinorCompat) + ", row 'CUDA " + std::to_string(cuda_major) + ".x: >= " +
               family_min + "'";
    if (r.required.empty()) r.required = std::string(">= ") + family_min;
    r.message = exact != nullptr
        ? "driver " + driver_version + " is older than CUDA " + cuda + "'s own driver (" +
              r.required + ") but runs it through CUDA minor version compatibility (>= " +
              family_min + " for CUDA " + std::to_string(cuda_major) +
              ".x): code needing newer driver features or JIT of newer PTX fails"
        : "driver " + driver_version + " runs CUDA " + std::to_string(cuda_major) +
              ".x through minor version compatibility (>= " + family_min + "); CUDA " + cuda +
              " is newer than ortgpu's table";
    return r;
  }
  r.verdict = CompatVerdict::kIncompatible;
  if (r.required.empty()) r.required = std::string(">= ") + family_min;
  r.message = "driver " + driver_version + " is too old for CUDA " + cuda + " (needs " +
              r.required + (family_min != nullptr && exact != nullptr
                                ? std::string(", or >= ") + family_min +
                                      " with minor version compatibility"
                                : std::string()) +
              ")";
  return r;
}

CompatResult CheckDriverForArch(const std::string& driver_version, int cc) {
  CompatResult r;
  r.source = kArchSource;
  const ArchRow* arch = FindArch(cc);
  if (arch == nullptr) {
    r.message = "compute capability " + Cc(cc) + " is not in ortgpu's architecture table";
    return r;
  }
  r.source = "CUDA " + std::string(arch->first_cuda) + " release notes (first toolkit with sm_" + std::to_string(cc) +
             ")" + (arch->min_driver[0] != '\0' ? std::string("; its driver from ") + kCudaReleaseNotes : "") +
             "; CUDA C++ Programming Guide, 'Compute Capabilities'";
  const std::string what = std::string(arch->name) + " (compute capability " + Cc(cc) + ", " +
                           arch->examples + ")";
  if (arch->min_driver[0] == '\0') {
    r.verdict = CompatVerdict::kOk;
    r.message = what + " is supported by every driver that runs CUDA " + arch->first_cuda + "+";
    return r;
  }
  r.required = std::string(">= ") + arch->min_driver;
  if (!ParseVersion(driver_version)) {
    r.message = "driver version '" + driver_version + "' is not a dotted version number";
    return r;
  }
  if (CompareVersions(driver_version, arch->min_driver) >= 0) {
    r.verdict = CompatVerdict::kOk;
    r.message = "driver " + driver_version + " supports " + what;
  } else {
    r.verdict = CompatVerdict::kIncompatible;
    r.message = "driver " + driver_version + " predates " + what + ": it needs driver " +
                r.required + " (first supported by CUDA " + arch->first_cuda + ")";
  }
  return r;
}

CompatResult CheckCudaSupportsArch(int cuda_major, int cc) {
  CompatResult r;
  r.source = "CUDA Toolkit release notes, 'Deprecated or Dropped Features'";
  for (const auto& row : kArchFloors) {
    if (row.cuda_major != cuda_major) continue;
    r.required = "compute capability >= " + Cc(row.min_cc);
    if (cc >= row.min_cc) {
      r.verdict = CompatVerdict::kOk;
      r.message = "CUDA " + std::to_string(cuda_major) + " supports " + ArchName(cc) + " (" +
                  Cc(cc) + ")";
    } else {
      r.verdict = CompatVerdict::kIncompatible;
      r.message = std::string(row.dropped) + ": a GPU of compute capability " + Cc(cc) +
                  " cannot run CUDA " + std::to_string(cuda_major) + " code";
    }
    return r;
  }
  r.message = "no architecture floor known for CUDA " + std::to_string(cuda_major);
  return r;
}

std::string ArchName(int cc) {
  const ArchRow* arch = FindArch(cc);
  if (arch != nullptr) return arch->name;
  // Unlisted minors of a known major (a future 9.x or 12.x board).
  for (const auto& row : kArchs) {
    if (row.cc / 10 == cc / 10 && (cc >= 100) == (row.cc >= 100)) return row.name;
  }
  return "unknown architecture";
}

std::string FormatComputeCapability(int cc) {
  return std::to_string(cc / 10) + "." + std::to_string(cc % 10);
}

EpBuildResult EpBuildFor(const std::string& ort_version) {
  EpBuildResult r;
  if (!ParseVersion(ort_version)) {
    r.message = "ONNX Runtime version '" + ort_version + "' is not a dotted version number";
    return r;
  }
  for (const auto& row : kOrtBuilds) {
    if (CompareVersions(ort_version, row.first) < 0 || CompareVersions(ort_version, row.last) > 0) {
      continue;
    }
    r.builds.push_back({row.cuda_major, row.cudnn_major, row.package, row.source});
  }
  if (r.builds.empty()) {
    r.message = "ONNX Runtime " + ort_version + " is not in ortgpu's CUDA EP table (1.0 to 1.29)";
    return r;
  }
  r.verdict = CompatVerdict::kOk;
  r.message = "ONNX Runtime " + ort_version + " CUDA EP builds:";
  for (const auto& b : r.builds) {
    r.message += " CUDA " + std::to_string(b.cuda_major) + " + cuDNN " +
                 std::to_string(b.cudnn_major) + " (" + b.package + ");";
  }
  r.message.pop_back();
  return r;
}

CompatResult CheckKernelsForArch(const std::set<int>& cubin_archs, const std::set<int>& ptx_archs,
                                 int device_cc) {
  CompatResult r;
  r.source = "CUDA C++ Programming Guide, 'Binary Compatibility' and 'PTX Compatibility'";
  auto list = [](const std::set<int>& s, const char* prefix) {
    std::string out;
    for (int a : s) out += (out.empty() ? "" : ", ") + std::string(prefix) + std::to_string(a);
    return out.empty() ? std::string("none") : out;
  };
  const std::string have = "machine code for " + list(cubin_archs, "sm_") + "; PTX for " +
                           list(ptx_archs, "compute_");
  const std::string gpu = ArchName(device_cc) + " sm_" + std::to_string(device_cc);
  r.required = "sm_" + std::to_string(device_cc);
  if (cubin_archs.count(device_cc) > 0) {
    r.verdict = CompatVerdict::kOk;
    r.message = "machine code for " + gpu + " is present";
    return r;
  }
  // A cubin for sm_XY runs on sm_XZ with Z >= Y (same major only).
  int best = -1;
  for (int a : cubin_archs) {
    if (a / 10 == device_cc / 10 && a <= device_cc) best = std::max(best, a);
  }
  if (best >= 0) {
    r.verdict = CompatVerdict::kOk;
    r.message = "sm_" + std::to_string(best) + " machine code runs on " + gpu +
                " (same major, binary compatible)";
    return r;
  }
  int ptx = -1;
  for (int a : ptx_archs) {
    if (a <= device_cc) ptx = std::max(ptx, a);
  }
  if (ptx >= 0) {
    r.verdict = CompatVerdict::kDegraded;
    r.message = "no machine code for " + gpu + "; the driver JIT-compiles compute_" +
                std::to_string(ptx) + " PTX at first use (slow first start; set "
                "CUDA_CACHE_MAXSIZE so the result is cached). Have: " + have;
    return r;
  }
  r.verdict = CompatVerdict::kIncompatible;
  r.message = "no machine code or PTX usable on " + gpu + ": kernels will be missing "
              "(CUDA_ERROR_NO_BINARY_FOR_GPU / 'no kernel image is available'). Have: " + have;
  return r;
}

CompatResult CheckCudnnForCuda(int cudnn_cudart_version, int runtime_version) {
  CompatResult r;
  r.source = "cuDNN Support Matrix (docs.nvidia.com/deeplearning/cudnn/backend/latest/"
             "reference/support-matrix.html): cuDNN 9 ships per CUDA major";
  const int cudnn_major = cudnn_cudart_version / 1000;
  const int runtime_major = runtime_version / 1000;
  r.required = "cuDNN built for CUDA " + std::to_string(runtime_major);
  if (cudnn_cudart_version <= 0 || runtime_version <= 0) {
    r.message = "cuDNN's or the runtime's CUDA version is unknown";
    return r;
  }
  if (cudnn_major == runtime_major) {
    r.verdict = CompatVerdict::kOk;
    r.message = "cuDNN was built for CUDA " + FormatCudaVersion(cudnn_cudart_version) +
                ", matching the CUDA " + FormatCudaVersion(runtime_version) + " runtime";
  } else {
    r.verdict = CompatVerdict::kIncompatible;
    r.message = "cuDNN was built for CUDA " + std::to_string(cudnn_major) +
                " but the loaded CUDA runtime is " + std::to_string(runtime_major) +
                ": cuDNN calls fail (CUDNN_STATUS_VERSION_MISMATCH / missing libcudart.so." +
                std::to_string(cudnn_major) + ")";
  }
  return r;
}

}  // namespace ortgpu::gpu
