// LibraryProbe: for every CUDA library the ONNX Runtime CUDA EP needs (the
// table in cuda_libraries.h), what this machine has: the copy the dynamic
// loader would pick and where it came from, every other copy and its version,
// optionally the version the loaded library reports about itself, and the
// versioned symbols the EP needs that the picked copy lacks.
//
// The result is pure data (LibraryReport); doctor's checks turn it into
// findings ("libcudnn.so.9 not found; found 9.19.0 in .../nvidia/cudnn/lib").
//
// Versions of copies that are not loaded come, in order of trust, from the
// file's real name (libcudnn.so.9.19.0), from the pip .dist-info folder of
// the wheel that installed it (nvidia_cudnn_cu13-9.19.0.56.dist-info, looked
// for up to 3 folders above the library and in a sibling "dist-info"
// folder), or from a "<component> <major>.<minor>..." string in the file's
// .rodata; otherwise "unknown". NVIDIA's wheels name files by soname only and
// keep no version string in .rodata, so for them the .dist-info is what works.
//
// Loading (LibraryProbeOptions::load_libraries) dlopens libraries by soname
// with RTLD_LOCAL and never closes them. Not thread-safe with respect to
// other dlopen users' expectations; call from one thread at start-up.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpu/cuda_libraries.h"
#include "gpu/dynamic_loader.h"
#include "gpu/elf_reader.h"
#include "gpu/library_search.h"
#include "sys/file_system.h"

namespace ortgpu::gpu {

// One copy of a library on disk.
struct LibraryCopy {
  std::string path;       // as found: folder + "/" + soname
  std::string real_path;  // symlinks resolved
  std::string folder;     // the folder to put on LD_LIBRARY_PATH to use this copy
  CandidateSource source = CandidateSource::kDefaultDir;
  std::string version;    // "9.19.0", "13.0.96", or "unknown"
  // Where `version` came from: "loaded" (asked the library), "file_name",
  // "dist_info", "rodata", or "unknown".
  std::string version_origin = "unknown";
};

// A symbol the EP imports from this library that the picked copy lacks.
struct MissingSymbol {
  std::string name;     // "cublasLtMatmulAlgoGetHeuristic"
  std::string version;  // the version the EP requires: "libcublasLt.so.13"
};

// Everything known about one library of the table.
struct LibraryReport {
  // --- identity (copied from the CudaLibrary row)
  std::string soname;       // "libcudnn.so.9"
  std::string component;    // "cudnn"
  std::string display;      // "cuDNN"
  EpLinkage linkage = EpLinkage::kNeeded;
  bool needed_by_ep = false;  // linkage == kNeeded: the EP itself fails to load without it
  std::vector<std::string> pip_packages;
  std::string pip_install;     // command to suggest
  std::string system_package;  // Debian/Ubuntu package to suggest

  // --- search (no loading)
  bool found = false;                 // the loader would find it by soname
  std::optional<LibraryCopy> picked;  // the copy it would load (set iff found)
  std::vector<LibraryCopy> other_copies;  // every other copy (different real path)

  // --- loading (only when LibraryProbeOptions::load_libraries)
  bool load_attempted = false;
  bool loaded = false;
  std::string loaded_path;      // the file dlopen mapped (dlinfo), may differ from picked
  std::string load_error;       // dlerror() text when loading failed
  std::string loaded_version;   // decoded answer of the version function; "" if not asked
  std::string built_against_cudart;  // cudnnGetCudartVersion/cublasLtGetCudartVersion: "13.0"
  std::string version_error;    // why the version could not be asked (symbol missing, error code)

  // --- EP symbol check (only with LibraryProbeOptions::ep_library_path)
  bool symbols_checked = false;  // false: no EP given, the EP imports nothing versioned
                                 // from it, or the copy could not be read (symbols_error)
  std::vector<MissingSymbol> missing_symbols;  // empty when all present
  std::string symbols_error;
};

struct LibraryProbeOptions {
  // dlopen each library that has a version function and ask its version.
  // Default false: doctor's search-only mode never runs library code.
  bool load_libraries = false;
  // The CUDA EP (libonnxruntime_providers_cuda.so) whose imports are checked
  // against the picked copies. Default empty: no symbol check.
  std::string ep_library_path;
  // The EP already opened by the caller (doctor reads its NEEDED list and
  // fatbin first): its imports are used and ep_library_path is not read
  // again. Default null: ep_library_path is opened. REQUIRES: outlives the
  // ProbeCudaLibraries call.
  const ElfReader* ep_library = nullptr;
  // Largest file whose .rodata is scanned for a version string (bytes; only
  // .rodata is read, with ranged reads). Default 64 MiB.
  uint64_t max_version_scan_bytes = 64ull << 20;
  // Largest provider library whose symbols are checked (cuBLASLt 13 is
  // ~540 MB; only its dynamic symbol tables are read). Default 1 GiB.
  uint64_t max_symbol_read_bytes = 1ull << 30;
};

// Probes every row of CudaLibraries(), in table order.
// REQUIRES: `loader` non-null when options.load_libraries.
// Never fails as a whole: per-library problems land in the reports. A bad
// ep_library_path is reported in every needed library's symbols_error.
std::vector<LibraryReport> ProbeCudaLibraries(const FileSystem& fs, const LibrarySearch& search,
                                              DynamicLoader* loader, const LibraryProbeOptions& options);

// --- building blocks, exposed for doctor and tests

// "…/libcudnn.so.9.19.0" -> "9.19.0"; "…/libcuda.so.580.95.05" -> "580.95.05";
// "" when the name has no version with at least one dot after ".so.".
std::string VersionFromFileName(std::string_view path);
// The version in a "<package>-<version>.dist-info" folder of one of
// `pip_packages` (names as pip writes them: '-' -> '_'), looked for in the 3
// folders above `folder` and their "dist-info" subfolders; "" when none.
std::string VersionFromDistInfo(const FileSystem& fs, const std::string& folder,
                                const std::vector<std::string>& pip_packages);
// Scans NUL-terminated strings of `rodata` for one mentioning `component`
// (case-insensitive) followed by a version "<major>.<n>[.<n>...]"; "" if none.
std::string VersionFromRodata(std::string_view rodata, std::string_view component, int major);
// Symbols `consumer_undefined` requires from `provider_soname` (by GNU
// version file) that `provider` does not define with that version (by name
// only when the provider defines no versions). Weak references are skipped.
std::vector<MissingSymbol> FindMissingSymbols(const std::vector<ElfSymbol>& consumer_undefined,
                                              std::string_view provider_soname,
                                              const ElfReader& provider);

}  // namespace ortgpu::gpu
