#include "ort/device_memory.h"

#include <shared_mutex>
#include <string>

#include "ort/ort_values.h"
#include "ort/thread_streams.h"

namespace ortgpu {
namespace {

constexpr int kCudaMemcpyHostToDevice = 1;
constexpr int kCudaMemcpyDeviceToHost = 2;
constexpr int kCudaMemcpyDeviceToDevice = 3;
constexpr int kCudaErrorMemoryAllocation = 2;

struct CudartCalls {
  int (*set_device)(int) = nullptr;
  int (*stream_create)(void**, unsigned) = nullptr;
  int (*stream_destroy)(void*) = nullptr;
  int (*stream_sync)(void*) = nullptr;
  int (*malloc)(void**, size_t) = nullptr;
  int (*free)(void*) = nullptr;
  int (*copy_async)(void*, const void*, size_t, int, void*) = nullptr;
  int (*peer_async)(void*, int, const void*, int, size_t, void*) = nullptr;
  int (*memset_async)(void*, int, size_t, void*) = nullptr;
  bool ok() const {
    return set_device && stream_create && stream_destroy && stream_sync && malloc && free && copy_async && peer_async && memset_async;
  }
};

template <typename Fn>
void Bind(Fn& fn, const char* name) {
  fn = reinterpret_cast<Fn>(ort_internal::CudartSymbol(name));
}

class CudaRuntimeMemory final : public DeviceMemory {
 public:
  CudaRuntimeMemory() {
    Bind(c_.set_device, "cudaSetDevice");
    Bind(c_.stream_create, "cudaStreamCreateWithFlags");
    Bind(c_.stream_destroy, "cudaStreamDestroy");
    Bind(c_.stream_sync, "cudaStreamSynchronize");
    Bind(c_.malloc, "cudaMalloc");
    Bind(c_.free, "cudaFree");
    Bind(c_.copy_async, "cudaMemcpyAsync");
    Bind(c_.peer_async, "cudaMemcpyPeerAsync");
    Bind(c_.memset_async, "cudaMemsetAsync");
  }

  Expected<uint64_t> Allocate(size_t bytes, int device) override {
    ORTGPU_RETURN_IF_ERROR(Ready(device));
    std::shared_lock capture(ort_internal::CudaCaptureMutex());  // cudaMalloc must not meet a capture
    void* p = nullptr;
    const int rc = c_.malloc(&p, bytes);
    if (rc == kCudaErrorMemoryAllocation) {
      return ResourceExhausted("GPU " + std::to_string(device) + " has no room for a device batch buffer of " +
                               std::to_string(bytes) + " bytes; lower max_batch_size or the instance count");
    }
    if (rc != 0) return Failed("cudaMalloc", rc, device);
    return reinterpret_cast<uint64_t>(p);
  }

  void Free(uint64_t address, int device) override {
    if (!c_.ok() || address == 0 || c_.set_device(device) != 0) return;
    std::shared_lock capture(ort_internal::CudaCaptureMutex());
    c_.free(reinterpret_cast<void*>(address));
  }

  Status ToDevice(uint64_t dst, const void* src, size_t bytes, int device) override {
    return Async(device, "cudaMemcpyAsync (host to device)", [&](void* s) {
      return c_.copy_async(reinterpret_cast<void*>(dst), src, bytes, kCudaMemcpyHostToDevice, s);
    });
  }

  Status ToHost(void* dst, uint64_t src, size_t bytes, int device) override {
    return Async(device, "cudaMemcpyAsync (device to host)", [&](void* s) {
      return c_.copy_async(dst, reinterpret_cast<const void*>(src), bytes, kCudaMemcpyDeviceToHost, s);
    });
  }

  Status DeviceToDevice(uint64_t dst, int dst_device, uint64_t src, int src_device, size_t bytes) override {
    if (dst_device == src_device) {
      return Async(dst_device, "cudaMemcpyAsync (device to device)", [&](void* s) {
        return c_.copy_async(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), bytes,
                             kCudaMemcpyDeviceToDevice, s);
      });
    }
    Status st = Async(dst_device, "cudaMemcpyPeerAsync", [&](void* s) {
      return c_.peer_async(reinterpret_cast<void*>(dst), dst_device, reinterpret_cast<const void*>(src), src_device,
                           bytes, s);
    });
    if (st.ok()) return st;
    return InvalidArgument("the input is in device memory on GPU " + std::to_string(src_device) +
                           " and the model runs on GPU " + std::to_string(dst_device) +
                           ", and the copy between them failed (" + st.message() +
                           "); register the CUDA shared memory region on GPU " + std::to_string(dst_device));
  }

  Status Zero(uint64_t dst, size_t bytes, int device) override {
    return Async(device, "cudaMemsetAsync",
                 [&](void* s) { return c_.memset_async(reinterpret_cast<void*>(dst), 0, bytes, s); });
  }

  Status SetCurrentDevice(int device) override { return Ready(device); }

  Status Wait(int device) override {
    ORTGPU_RETURN_IF_ERROR(Ready(device));
    void* stream = Stream(device);
    if (stream == nullptr) return Internal("no CUDA stream for GPU " + std::to_string(device));
    const int rc = c_.stream_sync(stream);
    return rc == 0 ? Status::Ok() : Failed("cudaStreamSynchronize", rc, device);
  }

 private:
  static Status Failed(const char* what, int rc, int device) {
    return Internal(std::string(what) + " on GPU " + std::to_string(device) + " failed with CUDA error " +
                    std::to_string(rc) + "; run `ortgpu doctor` to check the GPU");
  }

  Status Ready(int device) const {
    if (!c_.ok()) {
      return Unavailable("the CUDA runtime (libcudart) is not loaded, so device memory cannot be used; run "
                         "`ortgpu doctor`");
    }
    if (c_.set_device(device) != 0) {
      return InvalidArgument("GPU " + std::to_string(device) + " is not visible to the server (CUDA_VISIBLE_DEVICES?)");
    }
    return Status::Ok();
  }

  // The calling thread's non-blocking stream on `device` (current already),
  // destroyed when the thread exits.
  void* Stream(int device) {
    thread_local ort_internal::ThreadStreams streams;
    return streams.Get(device, c_.stream_create, c_.stream_destroy);
  }

  template <typename Call>
  Status Async(int device, const char* what, Call call) {
    ORTGPU_RETURN_IF_ERROR(Ready(device));
    void* stream = Stream(device);
    if (stream == nullptr) return Internal("no CUDA stream for GPU " + std::to_string(device));
    std::shared_lock capture(ort_internal::CudaCaptureMutex());
    const int rc = call(stream);
    return rc == 0 ? Status::Ok() : Failed(what, rc, device);
  }

  CudartCalls c_;
};

}  // namespace

std::shared_ptr<DeviceMemory> CudaRuntimeDeviceMemory() {
  static const std::shared_ptr<DeviceMemory> memory = std::make_shared<CudaRuntimeMemory>();
  return memory;
}

}  // namespace ortgpu
