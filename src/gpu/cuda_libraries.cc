#include "gpu/cuda_libraries.h"

namespace ortgpu::gpu {

std::string_view EpLinkageName(EpLinkage l) {
  switch (l) {
    case EpLinkage::kNeeded: return "needed";
    case EpLinkage::kOpenedAtRunTime: return "runtime";
    case EpLinkage::kOpenedByCudnn: return "cudnn_sublibrary";
    case EpLinkage::kDriver: return "driver";
  }
  return "unknown";
}

const std::vector<CudaLibrary>& CudaLibraries() {
  // CUDA 13 wheel names: NVIDIA dropped the -cu13 suffix for the toolkit
  // wheels (nvidia-cuda-runtime-cu13 was deprecated in Oct 2025); cuDNN keeps it.
  static const std::vector<CudaLibrary> table = [] {
    std::vector<CudaLibrary> t;
    const auto add = [&t](CudaLibrary l) { t.push_back(std::move(l)); };
    add({"libcuda.so.1", "driver", "NVIDIA driver (CUDA driver API)", EpLinkage::kDriver, {}, "",
         "libnvidia-compute-<driver> (Ubuntu) / libcuda1 (Debian); install the NVIDIA driver",
         VersionQuery::kCudaDriver, "", -1});
    add({"libnvidia-ml.so.1", "nvml", "NVML", EpLinkage::kDriver, {}, "",
         "libnvidia-compute-<driver> (Ubuntu) / libnvidia-ml1 (Debian); install the NVIDIA driver",
         VersionQuery::kNvml, "", -1});
    add({"libcudart.so.13", "cudart", "CUDA runtime", EpLinkage::kNeeded,
         {"nvidia-cuda-runtime", "nvidia-cuda-runtime-cu13"}, "pip install nvidia-cuda-runtime==13.*",
         "cuda-cudart-13-0", VersionQuery::kCudaRuntime, "", 0});
    add({"libcublasLt.so.13", "cublasLt", "cuBLASLt", EpLinkage::kNeeded,
         {"nvidia-cublas", "nvidia-cublas-cu13"}, "pip install nvidia-cublas==13.*", "libcublas-13-0",
         VersionQuery::kCublasLt, "cublasLtGetCudartVersion", 1});
    add({"libcublas.so.13", "cublas", "cuBLAS", EpLinkage::kNeeded,
         {"nvidia-cublas", "nvidia-cublas-cu13"}, "pip install nvidia-cublas==13.*", "libcublas-13-0",
         VersionQuery::kCublas, "", 2});
    add({"libcurand.so.10", "curand", "cuRAND", EpLinkage::kNeeded,
         {"nvidia-curand", "nvidia-curand-cu13"}, "pip install nvidia-curand==10.4.*", "libcurand-13-0",
         VersionQuery::kCurand, "", 3});
    add({"libcufft.so.12", "cufft", "cuFFT", EpLinkage::kOpenedAtRunTime,
         {"nvidia-cufft", "nvidia-cufft-cu13"}, "pip install nvidia-cufft==12.*", "libcufft-13-0",
         VersionQuery::kCufft, "", 4});
    add({"libcudnn.so.9", "cudnn", "cuDNN", EpLinkage::kOpenedAtRunTime, {"nvidia-cudnn-cu13"},
         "pip install nvidia-cudnn-cu13==9.*", "libcudnn9-cuda-13", VersionQuery::kCudnn,
         "cudnnGetCudartVersion", 5});
    int order = 6;
    for (const char* sub : {"graph", "ops", "cnn", "adv", "engines_precompiled",
                            "engines_runtime_compiled", "heuristic"}) {
      add({std::string("libcudnn_") + sub + ".so.9", std::string("cudnn_") + sub,
           std::string("cuDNN ") + sub, EpLinkage::kOpenedByCudnn, {"nvidia-cudnn-cu13"},
           "pip install nvidia-cudnn-cu13==9.*", "libcudnn9-cuda-13", VersionQuery::kNone, "",
           order++});
    }
    return t;
  }();
  return table;
}

const CudaLibrary* FindCudaLibrary(std::string_view soname) {
  for (const auto& l : CudaLibraries()) {
    if (l.soname == soname) return &l;
  }
  return nullptr;
}

std::string DecodeCudaVersion(long v) {
  if (v <= 0) return "";
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

std::string DecodeCudnnVersion(long v) {
  if (v <= 0) return "";
  if (v < 90000) {  // cuDNN <= 8: major*1000 + minor*100 + patch
    return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 100) + "." +
           std::to_string(v % 100);
  }
  return DecodeCublasVersion(v);  // cuDNN 9: major*10000 + minor*100 + patch
}

std::string DecodeCublasVersion(long v) {
  if (v <= 0) return "";
  return std::to_string(v / 10000) + "." + std::to_string((v % 10000) / 100) + "." +
         std::to_string(v % 100);
}

std::string DecodeCurandVersion(long v) {
  if (v <= 0) return "";
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 100) + "." +
         std::to_string(v % 100);
}

}  // namespace ortgpu::gpu
