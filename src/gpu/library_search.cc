#include "gpu/library_search.h"

#include <fnmatch.h>

#include <cstring>
#include <set>
#include <sstream>

namespace ortgpu::gpu {

std::string_view CandidateSourceName(CandidateSource s) {
  switch (s) {
    case CandidateSource::kLdLibraryPath: return "ld_library_path";
    case CandidateSource::kRunpath: return "runpath";
    case CandidateSource::kLdCache: return "ld_cache";
    case CandidateSource::kLdConf: return "ld_conf";
    case CandidateSource::kDefaultDir: return "default_dir";
    case CandidateSource::kPip: return "pip";
    case CandidateSource::kConda: return "conda";
    case CandidateSource::kCudaToolkit: return "cuda_toolkit";
    case CandidateSource::kDriverMount: return "driver_mount";
    case CandidateSource::kExtra: return "extra";
  }
  return "unknown";
}

// ---------------------------------------------------------------- ld.so.cache

namespace {

constexpr std::string_view kOldCacheMagic = "ld.so-1.7.0";          // 11 bytes
constexpr std::string_view kNewCacheMagic = "glibc-ld.so.cache1.1";  // 20 bytes
constexpr size_t kNewHeaderSize = 48;  // magic+version 20, nlibs, len_strings, flags+pad, ext, unused[3]
constexpr size_t kNewEntrySize = 24;   // flags, key, value, osversion, hwcap(u64)
constexpr size_t kOldHeaderSize = 16;  // magic 11 + pad, nlibs
constexpr size_t kOldEntrySize = 12;   // flags, key, value

template <typename T>
bool LoadAt(std::string_view s, uint64_t off, T* out) {
  if (off > s.size() || sizeof(T) > s.size() - off) return false;
  std::memcpy(out, s.data() + off, sizeof(T));
  return true;
}

}  // namespace

Expected<std::vector<LdCacheEntry>> ParseLdSoCache(std::string_view bytes) {
  std::string_view cache = bytes;
  if (bytes.substr(0, kOldCacheMagic.size()) == kOldCacheMagic) {
    // Old table first; the new format follows it, 8-aligned.
    uint32_t old_n = 0;
    if (!LoadAt(bytes, 12, &old_n)) return InvalidArgument("ld.so.cache: truncated old header");
    uint64_t next = kOldHeaderSize + uint64_t{old_n} * kOldEntrySize;
    next = (next + 7) & ~uint64_t{7};
    if (next > bytes.size()) return InvalidArgument("ld.so.cache: old-format table past the end");
    cache = bytes.substr(next);
  }
  if (cache.substr(0, kNewCacheMagic.size()) != kNewCacheMagic) {
    return InvalidArgument("ld.so.cache: no \"glibc-ld.so.cache1.1\" header; the cache is corrupt "
                           "or from another libc (run ldconfig as root to rebuild it)");
  }
  uint32_t nlibs = 0;
  if (!LoadAt(cache, 20, &nlibs) || cache.size() < kNewHeaderSize) {
    return InvalidArgument("ld.so.cache: truncated header");
  }
  if (nlibs > (cache.size() - kNewHeaderSize) / kNewEntrySize) {
    return InvalidArgument("ld.so.cache: " + std::to_string(nlibs) + " entries do not fit in the file");
  }
  // String offsets of the new format are relative to its own header.
  const auto str_at = [&](uint32_t off) -> std::optional<std::string> {
    if (off >= cache.size()) return std::nullopt;
    const auto end = cache.find('\0', off);
    if (end == std::string_view::npos) return std::nullopt;
    return std::string(cache.substr(off, end - off));
  };
  std::vector<LdCacheEntry> out;
  out.reserve(nlibs);
  for (uint32_t i = 0; i < nlibs; ++i) {
    const uint64_t base = kNewHeaderSize + uint64_t{i} * kNewEntrySize;
    LdCacheEntry e;
    uint32_t key = 0, value = 0;
    LoadAt(cache, base, &e.flags);
    LoadAt(cache, base + 4, &key);
    LoadAt(cache, base + 8, &value);
    LoadAt(cache, base + 16, &e.hwcap);
    auto k = str_at(key);
    auto v = str_at(value);
    if (!k || !v) return InvalidArgument("ld.so.cache: entry " + std::to_string(i) + " names a string past the end");
    e.soname = std::move(*k);
    e.path = std::move(*v);
    out.push_back(std::move(e));
  }
  return out;
}

// ---------------------------------------------------------------- ld.so.conf

namespace {

void ReadConfInto(const FileSystem& fs, const std::string& path, int depth,
                  std::vector<std::string>* out) {
  if (depth > 8) return;
  auto text = fs.ReadFile(path, 1 << 20);
  if (!text.ok()) return;
  std::istringstream in(*text);
  std::string line;
  while (std::getline(in, line)) {
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::string first;
    if (!(words >> first)) continue;
    if (first == "hwcap") continue;
    if (first == "include") {
      std::string pattern;
      while (words >> pattern) {
        if (pattern.front() != '/') pattern = JoinPath(DirName(path), pattern);
        const std::string dir = DirName(pattern), glob = BaseName(pattern);
        auto entries = fs.ListDirectory(dir);
        if (!entries.ok()) continue;
        for (const auto& e : *entries) {
          if (!e.is_directory && fnmatch(glob.c_str(), e.name.c_str(), 0) == 0) {
            ReadConfInto(fs, JoinPath(dir, e.name), depth + 1, out);
          }
        }
      }
      continue;
    }
    // A line may hold several folders separated by blanks, ',' or ':'.
    std::string all = line;
    for (char& ch : all) {
      if (ch == ',' || ch == ':' || ch == '\t') ch = ' ';
    }
    std::istringstream dirs(all);
    std::string dir;
    while (dirs >> dir) {
      if (auto eq = dir.find('='); eq != std::string::npos) dir.resize(eq);  // legacy "dir=type"
      if (!dir.empty() && dir.front() == '/') out->push_back(dir);
    }
  }
}

}  // namespace

std::vector<std::string> ReadLdSoConf(const FileSystem& fs, const std::string& path) {
  std::vector<std::string> out;
  ReadConfInto(fs, path, 0, &out);
  return out;
}

// ---------------------------------------------------------------- LibrarySearch

LibrarySearch::LibrarySearch(const FileSystem& fs, const Environment& env, LibrarySearchOptions options)
    : fs_(fs), env_(env), options_(std::move(options)) {
  if (options_.home.empty()) options_.home = env_.Get("HOME").value_or("");
  const std::string& home = options_.home;

  // The loader's own folders.
  for (const auto& d : SplitPathList(env_.Get("LD_LIBRARY_PATH").value_or(""))) {
    AddFolder(&pre_cache_folders_, d, CandidateSource::kLdLibraryPath);
  }
  for (const auto& d : options_.runpath) AddFolder(&pre_cache_folders_, d, CandidateSource::kRunpath);

  auto cache_bytes = fs_.ReadFile(options_.ld_cache_path, 64 << 20);
  if (!cache_bytes.ok()) {
    ld_cache_status_ = cache_bytes.status();
  } else {
    auto entries = ParseLdSoCache(*cache_bytes);
    if (!entries.ok()) {
      ld_cache_status_ = entries.status().WithContext(options_.ld_cache_path);
    } else {
      // glibc prefers an entry of the base folder over hwcaps subfolders it
      // cannot verify here, so take the first plain (hwcap == 0) entry.
      for (const auto& e : *entries) {
        if ((e.flags & 0xff) != 3 || (e.flags & 0x0f00) != options_.cache_arch_flags) continue;
        if (e.hwcap != 0) continue;
        ld_cache_.emplace(e.soname, e.path);  // keeps the first
      }
    }
  }
  const std::vector<std::string> conf_dirs = ReadLdSoConf(fs_, options_.ld_conf_path);
  if (!ld_cache_status_.ok()) {
    for (const auto& d : conf_dirs) AddFolder(&post_cache_folders_, d, CandidateSource::kLdConf);
  }
  for (const auto& d : options_.default_dirs) AddFolder(&post_cache_folders_, d, CandidateSource::kDefaultDir);
  loader_folders_ = pre_cache_folders_;
  loader_folders_.insert(loader_folders_.end(), post_cache_folders_.begin(), post_cache_folders_.end());

  // Where other copies live. ld.so.conf folders first: they are what the
  // cache was built from.
  for (const auto& d : conf_dirs) AddFolder(&copy_folders_, d, CandidateSource::kLdConf);

  // Python environments: pythons on PATH (both the folder on PATH, which may
  // be a venv whose python3 links elsewhere, and the link's target).
  for (const auto& bin : SplitPathList(env_.Get("PATH").value_or(""))) {
    auto entries = fs_.ListDirectory(bin);
    if (!entries.ok()) continue;
    for (const auto& e : *entries) {
      const bool python3 = e.name == "python3" ||
                           (e.name.rfind("python3.", 0) == 0 && e.name.size() > 8 &&
                            e.name.find_first_not_of("0123456789", 8) == std::string::npos);
      if (!python3) continue;
      AddPythonPrefix(DirName(bin));
      AddPythonPrefix(DirName(DirName(fs_.RealPath(JoinPath(bin, e.name)))));
    }
  }
  if (auto venv = env_.Get("VIRTUAL_ENV")) AddPythonPrefix(*venv);
  for (const auto& opt : Glob("/opt", "")) {
    AddPythonPrefix(JoinPath(opt, ".venv"));
    AddPythonPrefix(JoinPath(opt, "venv"));
  }
  AddPythonPrefix("/opt/venv");
  if (!home.empty()) {
    AddPythonPrefix(JoinPath(home, ".venv"));
    AddPythonPrefix(JoinPath(home, "venv"));
    AddPythonPrefix(JoinPath(home, ".local"));
  }
  AddSitePackages("/usr/lib/python3/dist-packages");
  AddPythonPrefix("/usr/local");
  AddPythonPrefix("/usr");

  // conda.
  if (auto prefix = env_.Get("CONDA_PREFIX")) AddCondaRoot(*prefix);
  if (!home.empty()) {
    for (const char* d : {"miniconda3", "anaconda3", "miniforge3"}) AddCondaRoot(JoinPath(home, d));
  }
  AddCondaRoot("/opt/conda");

  // CUDA toolkits.
  std::vector<std::string> toolkits;
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"}) {
    if (auto v = env_.Get(var)) toolkits.push_back(*v);
  }
  for (const auto& d : Glob("/usr/local", "cuda")) toolkits.push_back(d);
  for (const auto& t : toolkits) {
    AddFolder(&copy_folders_, JoinPath(t, "lib64"), CandidateSource::kCudaToolkit);
    AddFolder(&copy_folders_, JoinPath(t, "lib"), CandidateSource::kCudaToolkit);
    for (const auto& target : Glob(JoinPath(t, "targets"), "")) {
      AddFolder(&copy_folders_, JoinPath(target, "lib"), CandidateSource::kCudaToolkit);
    }
  }

  // Driver libraries as container runtimes mount them.
  AddFolder(&copy_folders_, "/usr/local/nvidia/lib64", CandidateSource::kDriverMount);
  AddFolder(&copy_folders_, "/usr/local/nvidia/lib", CandidateSource::kDriverMount);
  for (const auto& d : options_.extra_dirs) AddFolder(&copy_folders_, d, CandidateSource::kExtra);
}

void LibrarySearch::AddFolder(std::vector<SearchFolder>* list, const std::string& path,
                              CandidateSource source) {
  for (const auto& f : *list) {
    if (f.path == path) return;
  }
  list->push_back({path, source});
}

std::vector<std::string> LibrarySearch::Glob(const std::string& dir, std::string_view prefix) const {
  std::vector<std::string> out;
  auto entries = fs_.ListDirectory(dir);
  if (!entries.ok()) return out;
  for (const auto& e : *entries) {
    if (e.is_directory && e.name.rfind(prefix, 0) == 0) out.push_back(JoinPath(dir, e.name));
  }
  return out;
}

void LibrarySearch::AddPythonPrefix(const std::string& prefix) {
  if (prefix.empty() || !fs_.IsDirectory(prefix)) return;
  for (const char* lib : {"lib", "lib64"}) {
    for (const auto& py : Glob(JoinPath(prefix, lib), "python3")) {
      AddSitePackages(JoinPath(py, "site-packages"));
      AddSitePackages(JoinPath(py, "dist-packages"));
    }
  }
}

void LibrarySearch::AddSitePackages(const std::string& site) {
  for (const auto& pkg : Glob(JoinPath(site, "nvidia"), "")) {
    AddFolder(&copy_folders_, JoinPath(pkg, "lib"), CandidateSource::kPip);
  }
}

void LibrarySearch::AddCondaRoot(const std::string& root) {
  if (!fs_.IsDirectory(root)) return;
  AddFolder(&copy_folders_, JoinPath(root, "lib"), CandidateSource::kConda);
  AddPythonPrefix(root);
  for (const auto& env : Glob(JoinPath(root, "envs"), "")) {
    AddFolder(&copy_folders_, JoinPath(env, "lib"), CandidateSource::kConda);
    AddPythonPrefix(env);
  }
}

std::optional<LibraryCandidate> LibrarySearch::Probe(const SearchFolder& folder,
                                                     const std::string& soname) const {
  const std::string path = JoinPath(folder.path, soname);
  if (!fs_.Exists(path) || fs_.IsDirectory(path)) return std::nullopt;
  return LibraryCandidate{path, fs_.RealPath(path), folder.path, folder.source};
}

LibrarySearchResult LibrarySearch::Find(const std::string& soname) const {
  LibrarySearchResult result;
  result.soname = soname;
  std::vector<LibraryCandidate> all;  // every copy, in search order
  for (const auto& f : pre_cache_folders_) {
    if (auto c = Probe(f, soname)) all.push_back(std::move(*c));
  }
  if (auto it = ld_cache_.find(soname); it != ld_cache_.end() && fs_.Exists(it->second)) {
    all.push_back({it->second, fs_.RealPath(it->second), DirName(it->second), CandidateSource::kLdCache});
  }
  for (const auto& f : post_cache_folders_) {
    if (auto c = Probe(f, soname)) all.push_back(std::move(*c));
  }
  // Everything so far is on the loader's path: the first one is its pick.
  if (!all.empty()) result.loader_pick = all.front();
  for (const auto& f : copy_folders_) {
    if (auto c = Probe(f, soname)) all.push_back(std::move(*c));
  }
  std::set<std::string> seen;
  if (result.loader_pick) seen.insert(result.loader_pick->real_path);
  for (auto& c : all) {
    if (seen.insert(c.real_path).second) result.other_copies.push_back(std::move(c));
  }
  return result;
}

}  // namespace ortgpu::gpu
