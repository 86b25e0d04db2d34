#include "gpu/cuda_driver.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <vector>

namespace ortgpu::gpu {
namespace {

// The slice of the CUDA driver API used here, declared by hand (cuda.h is
// not available at build time). Types follow cuda.h: CUresult and CUdevice
// are int, CUdevice_attribute an enum passed as int.
using CuResult = int;
using CuDevice = int;
struct CuUuid {
  unsigned char bytes[16];
};
using CuInitFn = CuResult (*)(unsigned int);
using CuDriverGetVersionFn = CuResult (*)(int*);
using CuDeviceGetCountFn = CuResult (*)(int*);
using CuDeviceGetFn = CuResult (*)(CuDevice*, int);
using CuDeviceGetNameFn = CuResult (*)(char*, int, CuDevice);
using CuDeviceGetUuidFn = CuResult (*)(CuUuid*, CuDevice);
using CuDeviceGetPciBusIdFn = CuResult (*)(char*, int, CuDevice);
using CuDeviceGetAttributeFn = CuResult (*)(int*, int, CuDevice);
using CuDeviceTotalMemFn = CuResult (*)(size_t*, CuDevice);
using CuGetErrorStringFn = CuResult (*)(CuResult, const char**);
// The copy test's entry points. CUcontext is an opaque pointer, CUdeviceptr
// an unsigned 64-bit integer on 64-bit hosts.
using CuContext = void*;
using CuDevicePtr = unsigned long long;
using CuPrimaryCtxRetainFn = CuResult (*)(CuContext*, CuDevice);
using CuCtxPushFn = CuResult (*)(CuContext);
using CuCtxPopFn = CuResult (*)(CuContext*);
using CuCtxSynchronizeFn = CuResult (*)();
using CuMemAllocFn = CuResult (*)(CuDevicePtr*, size_t);
using CuMemFreeFn = CuResult (*)(CuDevicePtr);
using CuMemAllocHostFn = CuResult (*)(void**, size_t);
using CuMemFreeHostFn = CuResult (*)(void*);
using CuMemcpyHtoDFn = CuResult (*)(CuDevicePtr, const void*, size_t);
using CuMemcpyDtoHFn = CuResult (*)(void*, CuDevicePtr, size_t);

constexpr int kAttrComputeCapabilityMajor = 75;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
constexpr int kAttrComputeCapabilityMinor = 76;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR

std::string FormatUuid(const unsigned char b[16]) {
  char out[48];
  std::snprintf(out, sizeof(out),
                "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
                b[13], b[14], b[15]);
  return out;
}

class CudaDriver final : public GpuDriver {
 public:
  explicit CudaDriver(CudaDriverOptions options) : options_(std::move(options)) {}
  // The handle is never closed: libcuda does not support being unloaded while
  // other code in the process (the CUDA runtime, ORT) may still use it.
  ~CudaDriver() override = default;

  Status Load() override {
    if (handle_ != nullptr) return Status::Ok();
    DynamicLoader& loader = *options_.loader;
    ORTGPU_ASSIGN_OR_RETURN(OpenedLibrary lib, OpenLibrary(loader, options_.library, SymbolScope::kLocal));
    path_ = lib.path;
    // Optional entry points first: cuDeviceGetUuid_v2 (CUDA 11.4+) also
    // reports MIG instance UUIDs; the plain symbol is the required fallback
    // for older drivers.
    ResolveSymbols(loader, lib.handle,
                   {FunctionSlot("cuDeviceGetUuid_v2", device_get_uuid_),
                    FunctionSlot("cuGetErrorString", get_error_string_),
                    FunctionSlot("cuGetErrorName", get_error_name_)});
    // The copy test's: without them MeasureCopyBandwidth says which is absent.
    copy_missing_ = ResolveSymbols(loader, lib.handle,
                                   {FunctionSlot("cuDevicePrimaryCtxRetain", primary_ctx_retain_),
                                    FunctionSlot("cuCtxPushCurrent_v2", ctx_push_),
                                    FunctionSlot("cuCtxPopCurrent_v2", ctx_pop_),
                                    FunctionSlot("cuCtxSynchronize", ctx_synchronize_),
                                    FunctionSlot("cuMemAlloc_v2", mem_alloc_),
                                    FunctionSlot("cuMemFree_v2", mem_free_),
                                    FunctionSlot("cuMemAllocHost_v2", mem_alloc_host_),
                                    FunctionSlot("cuMemFreeHost", mem_free_host_),
                                    FunctionSlot("cuMemcpyHtoD_v2", memcpy_htod_),
                                    FunctionSlot("cuMemcpyDtoH_v2", memcpy_dtoh_)});
    std::vector<SymbolSlot> required = {
        FunctionSlot("cuInit", init_),
        FunctionSlot("cuDriverGetVersion", driver_get_version_),
        FunctionSlot("cuDeviceGetCount", device_get_count_),
        FunctionSlot("cuDeviceGet", device_get_),
        FunctionSlot("cuDeviceGetName", device_get_name_),
        FunctionSlot("cuDeviceGetPCIBusId", device_get_pci_bus_id_),
        FunctionSlot("cuDeviceGetAttribute", device_get_attribute_),
        FunctionSlot("cuDeviceTotalMem_v2", device_total_mem_),
    };
    if (device_get_uuid_ == nullptr) required.push_back(FunctionSlot("cuDeviceGetUuid", device_get_uuid_));
    ORTGPU_RETURN_IF_ERROR(MissingSymbolsError(
        path_, "CUDA driver", ResolveSymbols(loader, lib.handle, required),
        "it is not a usable NVIDIA driver library (too old, or not libcuda)"));
    handle_ = lib.handle;
    return Status::Ok();
  }

  std::string LibraryPath() const override { return handle_ != nullptr ? path_ : ""; }

  Expected<int> DriverVersion() override {
    ORTGPU_RETURN_IF_ERROR(RequireLoaded());
    int v = 0;
    if (CuResult r = driver_get_version_(&v); r != 0) return Error("cuDriverGetVersion", r);
    return v;
  }

  Status Init() override {
    ORTGPU_RETURN_IF_ERROR(RequireLoaded());
    if (CuResult r = init_(0); r != 0) return Error("cuInit", r);
    return Status::Ok();
  }

  Expected<int> DeviceCount() override {
    ORTGPU_RETURN_IF_ERROR(RequireLoaded());
    int n = 0;
    if (CuResult r = device_get_count_(&n); r != 0) return Error("cuDeviceGetCount", r);
    return n;
  }

  Expected<CudaDeviceProps> Device(int ordinal) override {
    ORTGPU_RETURN_IF_ERROR(RequireLoaded());
    CuDevice dev = 0;
    if (CuResult r = device_get_(&dev, ordinal); r != 0) return Error("cuDeviceGet", r);
    CudaDeviceProps p;
    p.ordinal = ordinal;
    char name[256] = {};
    if (CuResult r = device_get_name_(name, sizeof(name) - 1, dev); r != 0) {
      return Error("cuDeviceGetName", r);
    }
    p.name = name;
    CuUuid uuid{};
    if (CuResult r = device_get_uuid_(&uuid, dev); r != 0) return Error("cuDeviceGetUuid", r);
    p.uuid = FormatUuid(uuid.bytes);
    char bus[64] = {};
    if (CuResult r = device_get_pci_bus_id_(bus, sizeof(bus) - 1, dev); r != 0) {
      return Error("cuDeviceGetPCIBusId", r);
    }
    p.pci_bus_id = bus;
    if (CuResult r = device_get_attribute_(&p.cc_major, kAttrComputeCapabilityMajor, dev); r != 0) {
      return Error("cuDeviceGetAttribute(COMPUTE_CAPABILITY_MAJOR)", r);
    }
    if (CuResult r = device_get_attribute_(&p.cc_minor, kAttrComputeCapabilityMinor, dev); r != 0) {
      return Error("cuDeviceGetAttribute(COMPUTE_CAPABILITY_MINOR)", r);
    }
    size_t total = 0;
    if (CuResult r = device_total_mem_(&total, dev); r != 0) return Error("cuDeviceTotalMem", r);
    p.total_memory = total;
    return p;
  }

  Expected<CopyBandwidth> MeasureCopyBandwidth(int ordinal, const CopyTestOptions& options) override {
    ORTGPU_RETURN_IF_ERROR(RequireLoaded());
    if (!copy_missing_.empty()) {
      std::string names;
      for (const auto& n : copy_missing_) names += (names.empty() ? "" : ", ") + n;
      return Unimplemented(path_ + " lacks " + names + ": the copy test cannot run");
    }
    if (options.bytes == 0 || options.repetitions < 1) return InvalidArgument("copy test: bytes and repetitions must be > 0");
    const auto start = std::chrono::steady_clock::now();
    CuDevice dev = 0;
    if (CuResult r = device_get_(&dev, ordinal); r != 0) return Error("cuDeviceGet", r);
    // The primary context stays retained: ORT's CUDA EP (through the CUDA
    // runtime) uses this same context, so releasing it would only make ORT
    // create it again (~100 ms and its memory).
    CuContext ctx = nullptr;
    if (CuResult r = primary_ctx_retain_(&ctx, dev); r != 0) return Error("cuDevicePrimaryCtxRetain", r);
    if (CuResult r = ctx_push_(ctx); r != 0) return Error("cuCtxPushCurrent", r);
    const size_t n = static_cast<size_t>(options.bytes);
    CuDevicePtr device = 0;
    void* pinned = nullptr;
    std::vector<unsigned char> pageable;
    Expected<CopyBandwidth> result = InvalidArgument("copy test did not run");
    if (CuResult r = mem_alloc_(&device, n); r != 0) {
      result = Error("cuMemAlloc", r);
    } else if (CuResult r2 = mem_alloc_host_(&pinned, n); r2 != 0) {
      result = Error("cuMemAllocHost", r2);
    } else {
      pageable.assign(n, 1);  // touched, so page faults are not timed
      std::memset(pinned, 1, n);
      result = TimeCopies(device, static_cast<unsigned char*>(pinned), pageable.data(), options);
    }
    if (pinned != nullptr) (void)mem_free_host_(pinned);
    if (device != 0) (void)mem_free_(device);
    CuContext popped = nullptr;
    (void)ctx_pop_(&popped);
    if (result.ok()) {
      result->total_ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    }
    return result;
  }

 private:
  // One untimed copy, then `repetitions` timed ones, for each of the four
  // kinds; the best time of each. REQUIRES: the context is current.
  Expected<CopyBandwidth> TimeCopies(CuDevicePtr device, unsigned char* pinned, unsigned char* pageable,
                                     const CopyTestOptions& o) {
    const size_t n = static_cast<size_t>(o.bytes);
    CopyBandwidth out;
    out.bytes = o.bytes;
    out.repetitions = o.repetitions;
    struct Kind {
      unsigned char* host;
      bool to_device;
      double* gbps;
    };
    const Kind kinds[] = {{pinned, true, &out.pinned_h2d},
                          {pinned, false, &out.pinned_d2h},
                          {pageable, true, &out.pageable_h2d},
                          {pageable, false, &out.pageable_d2h}};
    for (const Kind& k : kinds) {
      double best_s = 0;
      for (int i = 0; i <= o.repetitions; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        CuResult r = k.to_device ? memcpy_htod_(device, k.host, n) : memcpy_dtoh_(k.host, device, n);
        if (r == 0) r = ctx_synchronize_();
        if (r != 0) return Error(k.to_device ? "cuMemcpyHtoD" : "cuMemcpyDtoH", r);
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (i > 0 && (best_s == 0 || s < best_s)) best_s = s;
      }
      *k.gbps = best_s > 0 ? static_cast<double>(n) / best_s / 1e9 : 0;
    }
    return out;
  }

  Status RequireLoaded() const {
    if (handle_ == nullptr) return FailedPrecondition("libcuda is not loaded: call Load() first");
    return Status::Ok();
  }

  Status Error(const std::string& call, CuResult r) const {
    const char* desc = nullptr;
    std::string description;
    if (get_error_string_ != nullptr && get_error_string_(r, &desc) == 0 && desc != nullptr) {
      description = desc;
    }
    const char* name = nullptr;
    std::string error_name;
    if (get_error_name_ != nullptr && get_error_name_(r, &name) == 0 && name != nullptr) {
      error_name = name;
    }
    return CudaCallError(call, r, description, error_name);
  }

  CudaDriverOptions options_;
  void* handle_ = nullptr;
  std::string path_;
  CuInitFn init_ = nullptr;
  CuDriverGetVersionFn driver_get_version_ = nullptr;
  CuDeviceGetCountFn device_get_count_ = nullptr;
  CuDeviceGetFn device_get_ = nullptr;
  CuDeviceGetNameFn device_get_name_ = nullptr;
  CuDeviceGetUuidFn device_get_uuid_ = nullptr;
  CuDeviceGetPciBusIdFn device_get_pci_bus_id_ = nullptr;
  CuDeviceGetAttributeFn device_get_attribute_ = nullptr;
  CuDeviceTotalMemFn device_total_mem_ = nullptr;
  CuGetErrorStringFn get_error_string_ = nullptr;
  CuGetErrorStringFn get_error_name_ = nullptr;
  std::vector<std::string> copy_missing_;
  CuPrimaryCtxRetainFn primary_ctx_retain_ = nullptr;
  CuCtxPushFn ctx_push_ = nullptr;
  CuCtxPopFn ctx_pop_ = nullptr;
  CuCtxSynchronizeFn ctx_synchronize_ = nullptr;
  CuMemAllocFn mem_alloc_ = nullptr;
  CuMemFreeFn mem_free_ = nullptr;
  CuMemAllocHostFn mem_alloc_host_ = nullptr;
  CuMemFreeHostFn mem_free_host_ = nullptr;
  CuMemcpyHtoDFn memcpy_htod_ = nullptr;
  CuMemcpyDtoHFn memcpy_dtoh_ = nullptr;
};

constexpr std::string_view kCodeTag = " [CUresult ";

}  // namespace

std::unique_ptr<GpuDriver> NewCudaDriver(const CudaDriverOptions& options) {
  return std::make_unique<CudaDriver>(options);
}

std::string FormatCudaVersion(int version) {
  if (version <= 0) return "unknown";
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

std::string CudaErrorName(int code) {
  switch (code) {
    case 0: return "CUDA_SUCCESS";
    case 1: return "CUDA_ERROR_INVALID_VALUE";
    case 2: return "CUDA_ERROR_OUT_OF_MEMORY";
    case 3: return "CUDA_ERROR_NOT_INITIALIZED";
    case 4: return "CUDA_ERROR_DEINITIALIZED";
    case 34: return "CUDA_ERROR_STUB_LIBRARY";
    case 46: return "CUDA_ERROR_DEVICE_UNAVAILABLE";
    case 100: return "CUDA_ERROR_NO_DEVICE";
    case 101: return "CUDA_ERROR_INVALID_DEVICE";
    case 102: return "CUDA_ERROR_DEVICE_NOT_LICENSED";
    case 209: return "CUDA_ERROR_NO_BINARY_FOR_GPU";
    case 222: return "CUDA_ERROR_UNSUPPORTED_PTX_VERSION";
    case 304: return "CUDA_ERROR_OPERATING_SYSTEM";
    case 801: return "CUDA_ERROR_NOT_SUPPORTED";
    case 802: return "CUDA_ERROR_SYSTEM_NOT_READY";
    case 803: return "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH";
    case 804: return "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE";
    case 999: return "CUDA_ERROR_UNKNOWN";
    default: return "CUDA error " + std::to_string(code);
  }
}

Status CudaCallError(const std::string& call, int code, const std::string& description,
                     const std::string& name) {
  std::string msg = call + " failed: " + (name.empty() ? CudaErrorName(code) : name);
  if (!description.empty()) msg += " (" + description + ")";
  msg += std::string(kCodeTag) + std::to_string(code) + "]";
  const Code c = code == kCudaErrorNoDevice ? Code::kUnavailable
               : code == 2                  ? Code::kResourceExhausted
                                            : Code::kInternal;
  return Status(c, std::move(msg));
}

int CudaErrorCodeOf(const Status& status) {
  const std::string& m = status.message();
  const size_t at = m.rfind(kCodeTag);
  if (at == std::string::npos) return 0;
  return std::atoi(m.c_str() + at + kCodeTag.size());
}

}  // namespace ortgpu::gpu
