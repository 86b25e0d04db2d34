// ThreadStreams: the CUDA streams one thread makes for itself, one per GPU,
// destroyed when the thread exits.
//
// ortgpu's host-device copies (CopyBytes in ort_values.h, DeviceMemory in
// device_memory.h) run on a non-blocking stream of the calling thread's own,
// so one instance worker's copy never waits for another's batch. Instance
// workers end when their model version unloads and new ones start with the
// next load; a stream kept in a bare thread_local map outlived its thread,
// one or two per worker for every load and unload. Declared thread_local by
// its users; cudart is resolved at run time, so the calls come in as
// function pointers (and fakes in tests).
#pragma once

#include <map>

namespace ortgpu::ort_internal {

class ThreadStreams {
 public:
  using CreateFn = int (*)(void** stream, unsigned flags);
  using DestroyFn = int (*)(void* stream);

  ThreadStreams() = default;
  ThreadStreams(const ThreadStreams&) = delete;
  ThreadStreams& operator=(const ThreadStreams&) = delete;
  // Destroys every stream made (cudaStreamDestroy returns at once; work
  // still queued on a stream completes first).
  ~ThreadStreams();

  // The non-blocking stream for `device` (the current device when called),
  // made with `create` on first use; null when it cannot be made, in which
  // case the next call tries again. `destroy` is kept for the destructor.
  void* Get(int device, CreateFn create, DestroyFn destroy);

 private:
  std::map<int, void*> streams_;
  DestroyFn destroy_ = nullptr;
};

}  // namespace ortgpu::ort_internal
