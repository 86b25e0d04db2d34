// PreloadCudaLibraries: makes the CUDA EP loadable without LD_LIBRARY_PATH,
// as onnxruntime's Python preload_dlls() does. For each CUDA library the
// dynamic loader would NOT find by soname but LibrarySearch found elsewhere
// (a pip wheel, conda, a CUDA toolkit folder), it dlopens that copy by
// absolute path with RTLD_GLOBAL, in dependency order: cudart, cuBLASLt,
// cuBLAS, cuRAND, cuFFT, then cuDNN and its sub-libraries from cuDNN's own
// folder. A later dlopen("libcudnn.so.9") by the EP, and cuDNN's own dlopen
// of libcudnn_graph.so.9 etc., then find the already-loaded objects by soname.
//
// Driver libraries (libcuda.so.1, libnvidia-ml.so.1) are never preloaded: a
// copy that does not match the kernel module is worse than none.
// Harmless on a machine without CUDA: nothing found, nothing loaded, every
// entry kNotFound. Call once, from one thread, before creating the CUDA EP.
#pragma once

#include <string>
#include <vector>

#include "gpu/dynamic_loader.h"
#include "gpu/library_search.h"

namespace ortgpu::gpu {

enum class PreloadAction {
  kLoaderFinds,    // the loader finds it by soname: nothing done
  kAlreadyLoaded,  // an object of that soname is already mapped: nothing done
  kPreloaded,      // dlopen'ed by absolute path
  kFailed,         // a copy was found but dlopen failed (see error)
  kNotFound,       // no copy anywhere
  kSkipped,        // a cuDNN sub-library while libcudnn.so.9 itself was not preloaded
};

struct PreloadResult {
  std::string soname;
  PreloadAction action = PreloadAction::kNotFound;
  std::string path;  // the file loaded (kPreloaded/kFailed) or the loader's pick (kLoaderFinds)
  CandidateSource source = CandidateSource::kDefaultDir;  // how `path` was found
  std::string error;  // dlerror() text for kFailed
};

struct PreloadOptions {
  // Preference among copies outside the loader path (first wins), after
  // preferring the folder earlier libraries were preloaded from.
  // Default: pip, conda, CUDA toolkit, then anything else.
  std::vector<CandidateSource> preference = {CandidateSource::kPip, CandidateSource::kConda,
                                             CandidateSource::kCudaToolkit};
};

// REQUIRES: `search` was built for this process's environment.
// Returns one entry per non-driver library of CudaLibraries(), in load order.
std::vector<PreloadResult> PreloadCudaLibraries(const LibrarySearch& search, DynamicLoader& loader,
                                                const PreloadOptions& options = {});

}  // namespace ortgpu::gpu
