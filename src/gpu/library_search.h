// LibrarySearch: where a shared library (by soname) would come from, and
// every other copy of it on the machine, found without loading anything.
//
// (a) The loader's pick, in glibc's order for a dlopen() by soname: the
//     folders of LD_LIBRARY_PATH in order, then the caller's DT_RUNPATH
//     (options), then /etc/ld.so.cache (or, when there is no readable cache,
//     the folders of /etc/ld.so.conf and its includes), then the default
//     folders (/lib/x86_64-linux-gnu ... /usr/lib).
// (b) Other copies where users really have them: pip wheels
//     (site-packages/nvidia/*/lib, e.g. nvidia/cu13/lib and nvidia/cudnn/lib)
//     of the pythons on PATH, VIRTUAL_ENV, common venvs (/opt/*/.venv,
//     ~/.venv, ~/venv, /opt/venv), /usr/lib/python3/dist-packages and
//     /usr/local/lib/python3.*; conda (CONDA_PREFIX, ~/miniconda3,
//     ~/anaconda3, ~/miniforge3, /opt/conda and their envs/*); CUDA toolkits
//     (CUDA_HOME, CUDA_PATH, /usr/local/cuda*/lib64 and targets/*/lib); the
//     driver folder containers mount (/usr/local/nvidia/lib64).
// Copies are deduplicated by real path. The search lists a fixed set of
// folders (at most one wildcard level each): it never walks the tree.
//
// All file access goes through FileSystem and Environment (tests use
// FakeFileSystem / FakeEnvironment). The folder lists and the ld.so.cache are
// read once in the constructor; afterwards Find() is const and thread-safe.
// REQUIRES: `fs` and `env` outlive the LibrarySearch.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "status/expected.h"
#include "sys/environment.h"
#include "sys/file_system.h"

namespace ortgpu::gpu {

// Which rule found a copy. Stable names (CandidateSourceName) go into JSON.
enum class CandidateSource {
  kLdLibraryPath,  // "ld_library_path"
  kRunpath,        // "runpath": LibrarySearchOptions::runpath
  kLdCache,        // "ld_cache": /etc/ld.so.cache
  kLdConf,         // "ld_conf": a folder of /etc/ld.so.conf(.d)
  kDefaultDir,     // "default_dir": /lib/x86_64-linux-gnu, /usr/lib, ...
  kPip,            // "pip": site-packages/nvidia/*/lib
  kConda,          // "conda"
  kCudaToolkit,    // "cuda_toolkit": /usr/local/cuda*, CUDA_HOME, CUDA_PATH
  kDriverMount,    // "driver_mount": /usr/local/nvidia/lib64
  kExtra,          // "extra": LibrarySearchOptions::extra_dirs
};
std::string_view CandidateSourceName(CandidateSource s);

struct LibraryCandidate {
  std::string path;       // folder + "/" + soname, as found
  std::string real_path;  // `path` with symlinks resolved (libcudnn.so.9.19.0)
  std::string folder;     // the folder it was found in (what LD_LIBRARY_PATH would need)
  CandidateSource source = CandidateSource::kDefaultDir;
};

struct LibrarySearchResult {
  std::string soname;
  // What dlopen(soname) would load; nullopt when the loader would fail.
  std::optional<LibraryCandidate> loader_pick;
  // Every other copy found, one per real path, the pick's real path excluded,
  // in search order (loader folders first, then pip, conda, toolkit, driver).
  std::vector<LibraryCandidate> other_copies;
};

struct SearchFolder {
  std::string path;
  CandidateSource source = CandidateSource::kDefaultDir;
};

struct LibrarySearchOptions {
  std::string ld_cache_path = "/etc/ld.so.cache";
  std::string ld_conf_path = "/etc/ld.so.conf";
  // glibc's trusted folders for x86-64 (Debian multiarch first).
  std::vector<std::string> default_dirs = {"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
                                           "/lib64", "/usr/lib64", "/lib", "/usr/lib"};
  // DT_RUNPATH of the object that will dlopen (already $ORIGIN-expanded);
  // searched after LD_LIBRARY_PATH. Default: none.
  std::vector<std::string> runpath;
  // More folders to look in for other copies. Default: none.
  std::vector<std::string> extra_dirs;
  // ld.so.cache entries to accept: the arch bits of the entry flags
  // (FLAG_X8664_LIB64 = 0x0300; aarch64 is 0x0a00).
  int32_t cache_arch_flags = 0x0300;
  // The home folder; empty: $HOME.
  std::string home;
};

// One usable entry of /etc/ld.so.cache.
struct LdCacheEntry {
  std::string soname;  // "libc.so.6"
  std::string path;    // "/lib/x86_64-linux-gnu/libc.so.6"
  int32_t flags = 0;   // FLAG_ELF_LIBC6 (3) | arch bits (0x0300 for x86-64)
  uint64_t hwcap = 0;  // non-zero for glibc-hwcaps subfolder entries
};

// Parses an ld.so.cache in the "glibc-ld.so.cache1.1" format, alone or after
// the old "ld.so-1.7.0" table. Entries keep file order.
// Errors: InvalidArgument for an unknown magic or an entry/string out of bounds.
[[nodiscard]] Expected<std::vector<LdCacheEntry>> ParseLdSoCache(std::string_view bytes);

// The folders listed by ld.so.conf at `path`, following `include` lines (glob
// in the last component, relative to the including file), comments and
// `hwcap` lines dropped, at most 8 levels of includes. Missing files give an
// empty list.
std::vector<std::string> ReadLdSoConf(const FileSystem& fs, const std::string& path);

class LibrarySearch {
 public:
  LibrarySearch(const FileSystem& fs, const Environment& env, LibrarySearchOptions options = {});

  // Searches for `soname` (e.g. "libcudnn.so.9").
  LibrarySearchResult Find(const std::string& soname) const;

  // The folders dlopen() would try before/after the cache, in order (for
  // reports): LD_LIBRARY_PATH and runpath, then ld.so.conf folders when the
  // cache is unreadable, then default folders.
  const std::vector<SearchFolder>& loader_folders() const { return loader_folders_; }
  // The folders searched for other copies (pip, conda, toolkit, driver ...).
  const std::vector<SearchFolder>& copy_folders() const { return copy_folders_; }
  // OK when /etc/ld.so.cache was read and parsed; otherwise why not.
  const Status& ld_cache_status() const { return ld_cache_status_; }

 private:
  void AddFolder(std::vector<SearchFolder>* list, const std::string& path, CandidateSource source);
  void AddPythonPrefix(const std::string& prefix);
  void AddSitePackages(const std::string& site);
  void AddCondaRoot(const std::string& root);
  std::vector<std::string> Glob(const std::string& dir, std::string_view prefix) const;
  std::optional<LibraryCandidate> Probe(const SearchFolder& folder, const std::string& soname) const;

  const FileSystem& fs_;
  const Environment& env_;
  LibrarySearchOptions options_;
  std::vector<SearchFolder> pre_cache_folders_;   // LD_LIBRARY_PATH, runpath
  std::vector<SearchFolder> post_cache_folders_;  // ld.so.conf (no cache), default dirs
  std::vector<SearchFolder> loader_folders_;      // both, for reports
  std::vector<SearchFolder> copy_folders_;
  std::map<std::string, std::string> ld_cache_;   // soname -> path (first usable entry)
  Status ld_cache_status_;
};

}  // namespace ortgpu::gpu
