// DynamicLoader: the seam over dlopen/dlsym/dlinfo/dl_iterate_phdr, so the
// library probe and the preloader can be tested with FakeDynamicLoader
// (tests/fakes/fake_dynamic_loader.h) on a machine with no CUDA at all.
// OpenLibrary, ResolveSymbols and MissingSymbolsError (below) are how the
// CUDA driver and NVML wrappers open their library and bind its entry points.
//
// Handles are never closed: CUDA libraries register atexit handlers and
// threads, and unloading them while the process runs is unsafe. A handle
// stays valid for the life of the process. The real loader is thread-safe
// (glibc serialises dlopen and keeps dlerror per thread); fakes need not be.
#pragma once

#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "status/expected.h"
#include "status/status.h"

namespace ortgpu::gpu {

// An opaque handle from Open(). Never null when returned OK.
using LibraryHandle = void*;

// RTLD_LOCAL or RTLD_GLOBAL. Global makes the library's symbols available to
// libraries opened later (needed when preloading CUDA libraries for the EP).
enum class SymbolScope { kLocal, kGlobal };

class DynamicLoader {
 public:
  virtual ~DynamicLoader() = default;

  // dlopen(name_or_path, RTLD_NOW | scope). A bare soname is searched the way
  // the dynamic linker does; a path containing '/' is opened as is.
  // Errors: Unavailable with the dlerror() text ("libcudnn.so.9: cannot open
  // shared object file: No such file or directory").
  [[nodiscard]] virtual Expected<LibraryHandle> Open(const std::string& name_or_path,
                                                     SymbolScope scope) = 0;
  // dlsym. NotFound with dlerror() text when the library lacks it.
  // REQUIRES: handle came from Open() of this loader.
  [[nodiscard]] virtual Expected<void*> Symbol(LibraryHandle handle, const std::string& name) = 0;
  // The file actually mapped for `handle` (dlinfo RTLD_DI_LINKMAP l_name).
  // REQUIRES: handle came from Open() of this loader.
  [[nodiscard]] virtual Expected<std::string> PathOf(LibraryHandle handle) = 0;
  // Paths of every object mapped in the process (dl_iterate_phdr), main
  // program excluded, in load order.
  virtual std::vector<std::string> LoadedLibraries() = 0;
};

// The process's real dynamic loader. Never null.
DynamicLoader& RealDynamicLoader();

// A library opened for its entry points: the handle and the file actually
// mapped (the name passed to Open() when the loader cannot tell).
struct OpenedLibrary {
  LibraryHandle handle = nullptr;
  std::string path;
};

// Open(name_or_path, scope) then PathOf(). Errors: Unavailable
// "cannot load libcuda.so.1: <the loader's dlerror text>".
[[nodiscard]] Expected<OpenedLibrary> OpenLibrary(DynamicLoader& loader, const std::string& name_or_path,
                                                  SymbolScope scope);

// One entry point to resolve: its name and the typed function pointer that
// receives it. Make one with FunctionSlot(); the slot must outlive the call
// to ResolveSymbols().
struct SymbolSlot {
  const char* name = nullptr;
  void* target = nullptr;                          // the function pointer's address
  void (*assign)(void* target, void* symbol) = nullptr;  // stores `symbol` into it, typed
};

// A slot that stores the symbol `name` into `fn` (nullptr when absent).
template <typename Fn>
SymbolSlot FunctionSlot(const char* name, Fn& fn) {
  static_assert(std::is_pointer_v<Fn> && std::is_function_v<std::remove_pointer_t<Fn>>,
                "FunctionSlot needs a function pointer");
  return {name, &fn, [](void* target, void* symbol) { *static_cast<Fn*>(target) = reinterpret_cast<Fn>(symbol); }};
}

// Looks up every slot's symbol in `handle` and stores it (nullptr when the
// library lacks it). Returns the names that were absent, in table order; an
// empty list means every slot is set.
// REQUIRES: handle came from loader.Open(); each slot from FunctionSlot().
std::vector<std::string> ResolveSymbols(DynamicLoader& loader, LibraryHandle handle,
                                        const std::vector<SymbolSlot>& slots);

// OK when `missing` is empty; otherwise Unavailable naming the library and
// every absent symbol: "<path> lacks the <api> entry points cuInit,
// cuDeviceGet; <advice>".
[[nodiscard]] Status MissingSymbolsError(const std::string& path, std::string_view api,
                                         const std::vector<std::string>& missing, std::string_view advice);

}  // namespace ortgpu::gpu
