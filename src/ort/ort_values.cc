#include "ort/ort_values.h"

#include <onnxruntime_run_options_config_keys.h>

#include <atomic>

#include <dlfcn.h>

#include <cstring>
#include <functional>

#include "ort/ort_status.h"
#include "ort/runtime.h"
#include "ort/thread_streams.h"

namespace ortgpu::ort_internal {
namespace {

Ort::Env& Env() { return *static_cast<Ort::Env*>(Runtime::Get().env_handle()); }

}  // namespace

// ORT's own Env::CopyTensors only knows data transfers of EPs registered as
// plugin libraries, not the classic CUDA EP ortgpu appends, so it is
// CopyBytes' fallback.
void* CudartSymbol(const char* name) {
  for (const char* lib : {"libcudart.so.13", "libcudart.so.12", "libcudart.so"}) {
    void* h = dlopen(lib, RTLD_NOW | RTLD_NOLOAD);
    if (h == nullptr) h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (h != nullptr) {
      if (void* sym = dlsym(h, name)) return sym;
    }
  }
  return nullptr;
}

namespace {

using CudaMemcpyFn = int (*)(void* dst, const void* src, size_t count, int kind);
using CudaSyncFn = int (*)();

// `name` from libcudart, looked up until found and kept from then on: a
// lookup made before the CUDA EP loaded libcudart (shared weights are read
// before a device's first session) must not stay a null for good.
template <typename Fn>
Fn CudartFn(std::atomic<void*>& slot, const char* name) {
  void* p = slot.load(std::memory_order_acquire);
  if (p == nullptr && (p = CudartSymbol(name)) != nullptr) slot.store(p, std::memory_order_release);
  return reinterpret_cast<Fn>(p);
}

CudaMemcpyFn FindCudaMemcpy() {
  static std::atomic<void*> slot{nullptr};
  return CudartFn<CudaMemcpyFn>(slot, "cudaMemcpy");
}

// The copy path of CopyBytes: cudaMemcpyAsync on a non-blocking stream of
// the calling thread's own, then a wait for that stream. A plain cudaMemcpy
// runs on the legacy default stream, which waits for every other blocking
// stream of the device, ORT's among them: one worker's copy of the next
// batch would wait for another worker's batch to finish instead of
// overlapping it.
struct StreamCopy {
  int (*get_device)(int*) = nullptr;
  int (*create)(void**, unsigned) = nullptr;
  int (*destroy)(void*) = nullptr;
  int (*copy_async)(void*, const void*, size_t, int, void*) = nullptr;
  int (*sync)(void*) = nullptr;
  bool ok() const { return get_device && create && destroy && copy_async && sync; }
};

const StreamCopy& FindStreamCopy() {
  static const StreamCopy fns = [] {
    StreamCopy f;
    f.get_device = reinterpret_cast<int (*)(int*)>(CudartSymbol("cudaGetDevice"));
    f.create = reinterpret_cast<int (*)(void**, unsigned)>(CudartSymbol("cudaStreamCreateWithFlags"));
    f.destroy = reinterpret_cast<int (*)(void*)>(CudartSymbol("cudaStreamDestroy"));
    f.copy_async = reinterpret_cast<int (*)(void*, const void*, size_t, int, void*)>(CudartSymbol("cudaMemcpyAsync"));
    f.sync = reinterpret_cast<int (*)(void*)>(CudartSymbol("cudaStreamSynchronize"));
    return f;
  }();
  return fns;
}

// The calling thread's copy stream on its current device, made on first use
// and destroyed when the thread exits; null when it cannot be made.
void* ThreadCopyStream(const StreamCopy& fns) {
  thread_local ThreadStreams streams;
  int device = 0;
  if (fns.get_device(&device) != 0) return nullptr;
  return streams.Get(device, fns.create, fns.destroy);
}

CudaSyncFn FindCudaDeviceSynchronize() {
  static CudaSyncFn fn = reinterpret_cast<CudaSyncFn>(CudartSymbol("cudaDeviceSynchronize"));
  return fn;
}

}  // namespace

Status SynchronizeDevice() {
  CudaSyncFn fn = FindCudaDeviceSynchronize();
  if (fn == nullptr) return Unavailable("cudaDeviceSynchronize is not available: libcudart is not loaded");
  const int rc = fn();
  if (rc != 0) {
    return Internal("waiting for the GPU after a CUDA graph replay failed with CUDA error " + std::to_string(rc) +
                    "; the device may have faulted: run `ortgpu doctor`, or remove enable_cuda_graph from config.pbtxt");
  }
  return Status::Ok();
}

// Copies `bytes` between host and device memory with cudart, else with
// ORT's CopyTensors on tensor views of the two buffers.
std::shared_mutex& CudaCaptureMutex() {
  static std::shared_mutex mu;
  return mu;
}

Status CopyBytes(void* dst, const void* src, size_t bytes, int kind, const Ort::Value& device_value) {
  if (bytes == 0) return Status::Ok();
  std::shared_lock capture(CudaCaptureMutex());
  if (const StreamCopy& fns = FindStreamCopy(); fns.ok()) {
    if (void* stream = ThreadCopyStream(fns)) {
      int rc = fns.copy_async(dst, src, bytes, kind, stream);
      if (rc == 0) rc = fns.sync(stream);
      if (rc != 0) {
        return Internal("cudaMemcpyAsync of " + std::to_string(bytes) + " bytes failed with CUDA error " + std::to_string(rc));
      }
      return Status::Ok();
    }
  }
  if (CudaMemcpyFn memcpy_fn = FindCudaMemcpy()) {
    const int rc = memcpy_fn(dst, src, bytes, kind);
    if (rc != 0) return Internal("cudaMemcpy of " + std::to_string(bytes) + " bytes failed with CUDA error " + std::to_string(rc));
    return Status::Ok();
  }
  try {
    auto info = device_value.GetTensorTypeAndShapeInfo();
    const auto shape = info.GetShape();
    Ort::MemoryInfo cpu = Ort::MemoryInfo::CreateCpu(OrtDeviceAllocator, OrtMemTypeDefault);
    void* host = kind == kCudaMemcpyHostToDevice ? const_cast<void*>(src) : dst;
    Ort::Value host_value = Ort::Value::CreateTensor(cpu, host, bytes, shape.data(), shape.size(), info.GetElementType());
    Ort::Value device_view = Ort::Value::CreateTensor(device_value.GetTensorMemoryInfo(),
                                                      kind == kCudaMemcpyHostToDevice ? dst : const_cast<void*>(src), bytes,
                                                      shape.data(), shape.size(), info.GetElementType());
    Ort::Status st = kind == kCudaMemcpyHostToDevice ? Env().CopyTensor(host_value, device_view, nullptr)
                                                     : Env().CopyTensor(device_view, host_value, nullptr);
    if (!st.IsOK()) {
      return Unavailable("copying a tensor between host and GPU failed: libcudart is not loaded and ORT's CopyTensors said: " +
                         st.GetErrorMessage());
    }
  } catch (const Ort::Exception& e) {
    return StatusFromOrt(e, "copying a tensor between host and GPU");
  }
  return Status::Ok();
}

namespace {

// Runs `fn` with GPU `device` current on the calling thread, then restores
// the thread's device. Holds the capture mutex shared: cudaMalloc and
// cudaMemcpy would fail another thread's graph capture.
Status OnDevice(int device, const std::function<Status()>& fn) {
  static std::atomic<void*> get_slot{nullptr}, set_slot{nullptr};
  auto get = CudartFn<int (*)(int*)>(get_slot, "cudaGetDevice");
  auto set = CudartFn<int (*)(int)>(set_slot, "cudaSetDevice");
  if (get == nullptr || set == nullptr) {
    return Unavailable("the CUDA runtime (libcudart) cannot be loaded, so GPU memory for shared weights cannot be "
                       "allocated; run `ortgpu doctor`, or set share_weights to off in config.pbtxt");
  }
  std::shared_lock capture(CudaCaptureMutex());
  int previous = 0;
  const bool restore = get(&previous) == 0 && previous != device;
  if (int rc = set(device); rc != 0) {
    return Unavailable("cudaSetDevice(" + std::to_string(device) + ") failed with CUDA error " + std::to_string(rc) +
                       "; check that GPU " + std::to_string(device) + " exists (`ortgpu doctor`)");
  }
  Status st = fn();
  if (restore) set(previous);
  return st;
}

}  // namespace

Expected<void*> CudaMalloc(int device, size_t bytes) {
  static std::atomic<void*> slot{nullptr};
  auto malloc_fn = CudartFn<int (*)(void**, size_t)>(slot, "cudaMalloc");
  void* ptr = nullptr;
  Status st = OnDevice(device, [&]() -> Status {
    if (malloc_fn == nullptr) return Unavailable("cudaMalloc is not available: libcudart is not loaded; run `ortgpu doctor`, or set share_weights to off");
    const int rc = malloc_fn(&ptr, bytes);
    if (rc == 0) return Status::Ok();
    constexpr int kCudaErrorMemoryAllocation = 2;
    return Status(rc == kCudaErrorMemoryAllocation ? Code::kResourceExhausted : Code::kInternal,
                  "cudaMalloc of " + std::to_string(bytes) + " bytes on GPU " + std::to_string(device) +
                      " failed with CUDA error " + std::to_string(rc));
  });
  if (!st.ok()) return st;
  return ptr;
}

void CudaFree(int device, void* ptr) {
  static std::atomic<void*> slot{nullptr};
  auto free_fn = CudartFn<int (*)(void*)>(slot, "cudaFree");
  if (ptr == nullptr || free_fn == nullptr) return;
  (void)OnDevice(device, [&] {
    free_fn(ptr);
    return Status::Ok();
  });
}

Status CudaCopyToDevice(void* dst, const void* src, size_t bytes) {
  CudaMemcpyFn memcpy_fn = FindCudaMemcpy();
  if (memcpy_fn == nullptr) return Unavailable("cudaMemcpy is not available: libcudart is not loaded; run `ortgpu doctor`, or set share_weights to off");
  std::shared_lock capture(CudaCaptureMutex());
  const int rc = memcpy_fn(dst, src, bytes, kCudaMemcpyHostToDevice);
  if (rc != 0) return Internal("cudaMemcpy of " + std::to_string(bytes) + " bytes to the GPU failed with CUDA error " + std::to_string(rc));
  return Status::Ok();
}

Ort::Value StringTensor(OrtAllocator* allocator, const Tensor& t) {
  Ort::Value v = Ort::Value::CreateTensor(allocator, t.shape.data(), t.shape.size(),
                                          ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING);
  // FillStringTensor would read each element up to its first NUL byte.
  for (size_t k = 0; k < t.strings.size(); ++k) {
    const std::string& s = t.strings[k];
    char* dst = v.GetResizedStringTensorElementBuffer(k, s.size());
    if (!s.empty()) std::memcpy(dst, s.data(), s.size());
  }
  return v;
}

bool OnCpu(const Ort::ConstMemoryInfo& info) { return info.GetDeviceType() == OrtMemoryInfoDeviceType_CPU; }

Ort::RunOptions PlainRunOptions(const Session& session) {
  Ort::RunOptions options;
  if (session.run_log_severity() >= 0) options.SetRunLogSeverityLevel(session.run_log_severity());
  if (auto id = PlainRunGraphAnnotation(session.options())) {
    options.AddConfigEntry("gpu_graph_id", std::to_string(*id).c_str());
  }
  return options;
}

void ShrinkArenaAfterRun(Ort::RunOptions& options, const Session& session) {
  std::string device = "cpu:0";
  if (session.options().provider == Provider::kCuda) {
    auto id = session.options().cuda_options.find("device_id");
    device = "gpu:" + (id != session.options().cuda_options.end() ? id->second : std::string("0"));
  }
  options.AddConfigEntry(kOrtRunOptionsConfigEnableMemoryArenaShrinkage, device.c_str());
}

Expected<Tensor> ToHost(const std::string& name, const Ort::Value& v) {
  if (!v.HasValue()) {
    return Internal("ONNX Runtime returned output '" + name + "' empty (no type, no data), as it does when a run replays "
                    "an already captured CUDA graph without that output bound to the graph's fixed buffers");
  }
  if (!v.IsTensor()) return Unimplemented("output '" + name + "' is not a tensor; ortgpu returns tensors only");
  auto info = v.GetTensorTypeAndShapeInfo();
  Tensor t;
  t.name = name;
  t.dtype = static_cast<DataType>(info.GetElementType());
  t.shape = info.GetShape();
  const size_t n = info.GetElementCount();
  if (t.dtype == DataType::kString) {
    t.strings.resize(n);
    // GetStringTensorElement(k) sizes each element from its length: NUL
    // bytes inside an element survive.
    for (size_t k = 0; k < n; ++k) t.strings[k] = v.GetStringTensorElement(k);
    return t;
  }
  t.data.resize(n * ElementSize(t.dtype));
  const void* src = v.GetTensorRawData();
  if (OnCpu(v.GetTensorMemoryInfo())) {
    if (!t.data.empty()) std::memcpy(t.data.data(), src, t.data.size());
    return t;
  }
  ORTGPU_RETURN_IF_ERROR(CopyBytes(t.data.data(), src, t.data.size(), kCudaMemcpyDeviceToHost, v));
  return t;
}

}  // namespace ortgpu::ort_internal
