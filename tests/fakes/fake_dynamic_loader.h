// FakeDynamicLoader: a DynamicLoader over a table of pretend libraries, for
// testing the library probe and the preloader without CUDA. A test declares
// which names/paths "load", to which file, with which symbols (real function
// pointers in the test, e.g. a cudaRuntimeGetVersion that writes 13000), and
// which fail with which dlerror text. Every Open() is recorded in order.
// Not thread-safe.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "gpu/dynamic_loader.h"

namespace ortgpu::testing {

class FakeDynamicLoader final : public gpu::DynamicLoader {
 public:
  struct Library {
    std::string path;                       // what PathOf() reports
    std::map<std::string, void*> symbols;   // dlsym table
  };
  struct OpenCall {
    std::string name_or_path;
    gpu::SymbolScope scope;
  };

  // Open(name_or_path) succeeds and maps `lib`. Several names may share one
  // path (soname and absolute path of the same file).
  void AddLibrary(const std::string& name_or_path, Library lib) { libs_[name_or_path] = std::move(lib); }
  // Open(name_or_path) fails with `dlerror_text`.
  void FailOpen(const std::string& name_or_path, std::string dlerror_text) {
    failures_[name_or_path] = std::move(dlerror_text);
  }
  // Paths reported by LoadedLibraries() before any Open().
  void AddAlreadyLoaded(const std::string& path) { loaded_.push_back(path); }

  template <typename Fn>
  static void* Fn2Ptr(Fn fn) { return reinterpret_cast<void*>(fn); }

  Expected<gpu::LibraryHandle> Open(const std::string& name_or_path, gpu::SymbolScope scope) override {
    calls_.push_back({name_or_path, scope});
    if (auto f = failures_.find(name_or_path); f != failures_.end()) return Unavailable(f->second);
    auto it = libs_.find(name_or_path);
    if (it == libs_.end()) {
      return Unavailable(name_or_path + ": cannot open shared object file: No such file or directory");
    }
    loaded_.push_back(it->second.path);
    return static_cast<gpu::LibraryHandle>(&it->second);
  }
  Expected<void*> Symbol(gpu::LibraryHandle handle, const std::string& name) override {
    auto* lib = static_cast<Library*>(handle);
    auto it = lib->symbols.find(name);
    if (it == lib->symbols.end()) return NotFound(lib->path + ": undefined symbol: " + name);
    return it->second;
  }
  Expected<std::string> PathOf(gpu::LibraryHandle handle) override {
    return static_cast<Library*>(handle)->path;
  }
  std::vector<std::string> LoadedLibraries() override { return loaded_; }

  const std::vector<OpenCall>& calls() const { return calls_; }

 private:
  std::map<std::string, Library> libs_;
  std::map<std::string, std::string> failures_;
  std::vector<std::string> loaded_;
  std::vector<OpenCall> calls_;
};

}  // namespace ortgpu::testing
