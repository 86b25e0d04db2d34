#include "gpu/preload.h"

#include <algorithm>

#include "gpu/cuda_libraries.h"
#include "sys/file_system.h"

namespace ortgpu::gpu {

namespace {

// Picks the copy to preload: one in a folder already used (keeps cuBLAS next
// to the cudart it was built with), else by source preference, else first.
const LibraryCandidate* Choose(const std::vector<LibraryCandidate>& copies,
                               const std::vector<std::string>& used_folders,
                               const PreloadOptions& options) {
  if (copies.empty()) return nullptr;
  for (const auto& folder : used_folders) {
    for (const auto& c : copies) {
      if (c.folder == folder) return &c;
    }
  }
  for (CandidateSource s : options.preference) {
    for (const auto& c : copies) {
      if (c.source == s) return &c;
    }
  }
  return &copies.front();
}

}  // namespace

std::vector<PreloadResult> PreloadCudaLibraries(const LibrarySearch& search, DynamicLoader& loader,
                                                const PreloadOptions& options) {
  std::vector<const CudaLibrary*> order;
  for (const auto& lib : CudaLibraries()) {
    if (lib.preload_order >= 0) order.push_back(&lib);
  }
  std::stable_sort(order.begin(), order.end(),
                   [](const CudaLibrary* a, const CudaLibrary* b) { return a->preload_order < b->preload_order; });

  std::vector<std::string> loaded_names;
  for (const auto& p : loader.LoadedLibraries()) loaded_names.push_back(BaseName(p));
  const auto already_loaded = [&](const std::string& soname) {
    return std::find(loaded_names.begin(), loaded_names.end(), soname) != loaded_names.end();
  };

  std::vector<std::string> used_folders;
  std::string cudnn_folder;  // set when libcudnn.so.9 was preloaded
  std::vector<PreloadResult> results;
  for (const CudaLibrary* lib : order) {
    PreloadResult r;
    r.soname = lib->soname;
    const LibrarySearchResult found = search.Find(lib->soname);
    const bool cudnn_sub = lib->linkage == EpLinkage::kOpenedByCudnn;
    if (cudnn_sub && cudnn_folder.empty()) {
      // cuDNN finds its sub-libraries itself when it is on the loader path.
      r.action = found.loader_pick ? PreloadAction::kLoaderFinds : PreloadAction::kSkipped;
      if (found.loader_pick) {
        r.path = found.loader_pick->path;
        r.source = found.loader_pick->source;
      }
      results.push_back(std::move(r));
      continue;
    }
    if (found.loader_pick && !cudnn_sub) {
      r.action = PreloadAction::kLoaderFinds;
      r.path = found.loader_pick->path;
      r.source = found.loader_pick->source;
      results.push_back(std::move(r));
      continue;
    }
    if (already_loaded(lib->soname)) {
      r.action = PreloadAction::kAlreadyLoaded;
      results.push_back(std::move(r));
      continue;
    }
    std::vector<LibraryCandidate> copies = found.other_copies;
    if (found.loader_pick) copies.insert(copies.begin(), *found.loader_pick);
    const LibraryCandidate* pick = nullptr;
    if (cudnn_sub) {
      // Sub-libraries must come from the same cuDNN release as libcudnn.so.9.
      for (const auto& c : copies) {
        if (c.folder == cudnn_folder) pick = &c;
      }
      if (pick == nullptr) {
        r.action = PreloadAction::kFailed;
        r.error = lib->soname + " is missing from " + cudnn_folder +
                  ", where libcudnn.so.9 was loaded from; the cuDNN install is incomplete (" +
                  lib->pip_install + ")";
        results.push_back(std::move(r));
        continue;
      }
    } else {
      pick = Choose(copies, used_folders, options);
    }
    if (pick == nullptr) {
      r.action = PreloadAction::kNotFound;
      results.push_back(std::move(r));
      continue;
    }
    r.path = pick->path;
    r.source = pick->source;
    auto h = loader.Open(pick->path, SymbolScope::kGlobal);
    if (!h.ok()) {
      r.action = PreloadAction::kFailed;
      r.error = h.status().message();
    } else {
      r.action = PreloadAction::kPreloaded;
      loaded_names.push_back(lib->soname);
      if (std::find(used_folders.begin(), used_folders.end(), pick->folder) == used_folders.end()) {
        used_folders.push_back(pick->folder);
      }
      if (lib->component == "cudnn") cudnn_folder = pick->folder;
    }
    results.push_back(std::move(r));
  }
  return results;
}

}  // namespace ortgpu::gpu
