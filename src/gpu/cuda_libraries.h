// CudaLibraries: the declarative table of the CUDA libraries the ONNX Runtime
// 1.29 CUDA execution provider (built for CUDA 13 + cuDNN 9) needs, what ships
// each one, and how each reports its own version. One row per soname; the
// search, probe, preload and doctor checks all read this table and nothing
// else knows the list.
//
// Also here: the hand-declared C signatures of the version functions (no CUDA
// headers exist at build time; ortgpu never links CUDA) and the decoders that
// turn their integers into "13.0" / "9.19.0". Immutable data, thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ortgpu::gpu {

// How the CUDA EP comes to need a library.
enum class EpLinkage {
  kNeeded,          // in the EP's ELF NEEDED list: the EP fails to load without it
  kOpenedAtRunTime, // dlopen'ed by the EP when a session is created (cuDNN, cuFFT)
  kOpenedByCudnn,   // dlopen'ed by libcudnn.so.9 from the loader path (its sub-libraries)
  kDriver,          // the NVIDIA driver's user-space libraries (never preloaded)
};
std::string_view EpLinkageName(EpLinkage l);  // "needed", "runtime", "cudnn_sublibrary", "driver"

// Which call asks the library its version once it is loaded.
enum class VersionQuery {
  kNone,            // no version function (cuDNN sub-libraries: same as libcudnn)
  kCudaRuntime,     // int cudaRuntimeGetVersion(int*)          13000 -> "13.0"
  kCudaDriver,      // int cuDriverGetVersion(int*)             13000 -> "13.0" (CUDA API level)
  kNvml,            // nvmlInit_v2(); nvmlSystemGetDriverVersion(char*, unsigned) -> "580.159.03"
  kCublas,          // int cublasGetProperty(int type, int*) MAJOR=0 MINOR=1 PATCH=2
  kCublasLt,        // size_t cublasLtGetVersion()              130100 -> "13.1.0"
  kCudnn,           // size_t cudnnGetVersion()                 91900 -> "9.19.0"
  kCurand,          // int curandGetVersion(int*)               10400 -> "10.4.0"
  kCufft,           // int cufftGetVersion(int*)                12000 -> "12.0.0"
};

struct CudaLibrary {
  std::string soname;     // "libcudnn.so.9"
  std::string component;  // "cudnn", "cublasLt", "cudart" ...
  std::string display;    // "cuDNN", "cuBLASLt", "CUDA runtime" ...
  EpLinkage linkage = EpLinkage::kNeeded;
  // pip distributions that ship it (CUDA 13 wheels put the toolkit libraries
  // in site-packages/nvidia/cu13/lib; cuDNN in site-packages/nvidia/cudnn/lib).
  std::vector<std::string> pip_packages;
  std::string pip_install;     // the command to suggest: "pip install nvidia-cudnn-cu13"
  std::string system_package;  // Debian/Ubuntu (NVIDIA CUDA repo) package
  VersionQuery version_query = VersionQuery::kNone;
  // Second query telling which CUDA runtime the library was built against
  // (cudnnGetCudartVersion, cublasLtGetCudartVersion); empty when none.
  std::string cudart_version_symbol;
  // Position in dependency order for preloading (lower loads first); driver
  // libraries have -1 (never preloaded).
  int preload_order = -1;
};

// The table, in preload (dependency) order: driver libs first, then cudart,
// cublasLt, cublas, curand, cufft, cudnn, cuDNN's sub-libraries.
const std::vector<CudaLibrary>& CudaLibraries();
// The row for `soname`, or nullptr.
const CudaLibrary* FindCudaLibrary(std::string_view soname);

// Version function signatures, declared by hand (C ABI, return 0 on success
// unless stated).
using CudaRuntimeGetVersionFn = int (*)(int* version);       // cudaRuntimeGetVersion
using CuDriverGetVersionFn = int (*)(int* version);          // cuDriverGetVersion
using NvmlInitFn = int (*)();                                // nvmlInit_v2, nvmlShutdown
using NvmlSystemGetDriverVersionFn = int (*)(char* version, unsigned int length);
using CublasGetPropertyFn = int (*)(int type, int* value);   // cublasGetProperty
using CublasLtGetVersionFn = size_t (*)();                   // cublasLtGetVersion, ...GetCudartVersion
using CudnnGetVersionFn = size_t (*)();                      // cudnnGetVersion, cudnnGetCudartVersion
using CurandGetVersionFn = int (*)(int* version);            // curandGetVersion
using CufftGetVersionFn = int (*)(int* version);             // cufftGetVersion
inline constexpr int kCublasPropertyMajor = 0, kCublasPropertyMinor = 1, kCublasPropertyPatch = 2;

// Decoders. Each returns "" for a non-positive value.
std::string DecodeCudaVersion(long v);     // 13000 -> "13.0", 12020 -> "12.2" (cudart/driver)
std::string DecodeCudnnVersion(long v);    // 91900 -> "9.19.0"; cuDNN 8: 8907 -> "8.9.7"
std::string DecodeCublasVersion(long v);   // 130100 -> "13.1.0" (major*10000+minor*100+patch)
std::string DecodeCurandVersion(long v);   // 10400 -> "10.4.0" (major*1000+minor*100+patch); cuFFT too

}  // namespace ortgpu::gpu
