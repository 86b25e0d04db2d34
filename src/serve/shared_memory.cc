#include "serve/shared_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

namespace ortgpu::serve {

struct SharedMemoryRegistry::Region {
  SharedMemoryRegionInfo info;
  void* base = nullptr;  // the mapping, from the page holding `offset`
  size_t length = 0;
  size_t lead = 0;       // bytes from base to offset (page alignment)
  // A CUDA region: its device address, and the IPC that opened it.
  uint64_t device_address = 0;
  std::shared_ptr<gpu::CudaIpc> cuda;
  ~Region() {
    if (base != nullptr) ::munmap(base, length);
    if (cuda != nullptr && device_address != 0) {
      if (Status st = cuda->Close(device_address, info.device_id); !st.ok()) {
        spdlog::warn("closing CUDA shared memory region '{}': {}", info.name, st.message());
      }
    }
  }
};

SharedMemoryRegistry::~SharedMemoryRegistry() = default;

Status SharedMemoryRegistry::RegisterCuda(const std::string& name, const std::string& raw_handle, int device_id,
                                          uint64_t byte_size) {
  if (name.empty()) return InvalidArgument("a shared memory region needs a name");
  if (byte_size == 0) return InvalidArgument(fmt::format("CUDA shared memory region '{}' has byte_size 0", name));
  if (device_id < 0) return InvalidArgument(fmt::format("CUDA shared memory region '{}': device_id {} is not a GPU", name, device_id));
  std::shared_ptr<gpu::CudaIpc> cuda;
  {
    MutexLock lock(&mu_);
    if (regions_.count(name) > 0) {
      return Status(Code::kAlreadyExists,
                    fmt::format("shared memory region '{}' is already registered; unregister it first", name));
    }
    if (cuda_ == nullptr) cuda_ = gpu::MakeDriverCudaIpc();
    cuda = cuda_;
  }
  auto address = cuda->Open(raw_handle, device_id);
  if (!address) {
    return Status(address.status().code(), fmt::format("failed to register CUDA shared memory region '{}': {}", name,
                                                       address.status().message()));
  }
  auto region = std::make_shared<Region>();
  region->info = {name, "", 0, byte_size, device_id};
  region->device_address = *address;
  region->cuda = std::move(cuda);
  MutexLock lock(&mu_);
  if (!regions_.emplace(name, std::move(region)).second) {
    return Status(Code::kAlreadyExists, fmt::format("shared memory region '{}' is already registered", name));
  }
  return Status::Ok();
}

Status SharedMemoryRegistry::Register(const std::string& name, const std::string& key, uint64_t offset,
                                      uint64_t byte_size) {
  if (name.empty()) return InvalidArgument("a shared memory region needs a name");
  {
    MutexLock lock(&mu_);
    if (regions_.count(name) > 0) {
      return Status(Code::kAlreadyExists,
                    fmt::format("shared memory region '{}' is already registered; unregister it first", name));
    }
  }
  const int fd = ::shm_open(key.c_str(), O_RDWR, 0);
  if (fd < 0) {
    return NotFound(fmt::format("Unable to open shared memory region: '{}' ({}); create it with shm_open before "
                                "registering it",
                                key, std::strerror(errno)));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) < offset + byte_size || byte_size == 0) {
    ::close(fd);
    return InvalidArgument(fmt::format("shared memory region '{}': offset {} + byte_size {} does not fit in '{}' "
                                       "({} bytes)",
                                       name, offset, byte_size, key, static_cast<int64_t>(st.st_size)));
  }
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  auto region = std::make_shared<Region>();
  region->lead = static_cast<size_t>(offset % page);
  region->length = static_cast<size_t>(byte_size) + region->lead;
  void* base = ::mmap(nullptr, region->length, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                      static_cast<off_t>(offset - region->lead));
  ::close(fd);
  if (base == MAP_FAILED) {
    return Internal(fmt::format("cannot map shared memory region '{}' of '{}': {}", name, key, std::strerror(errno)));
  }
  region->base = base;
  region->info = {name, key, offset, byte_size};
  MutexLock lock(&mu_);
  if (!regions_.emplace(name, std::move(region)).second) {
    return Status(Code::kAlreadyExists, fmt::format("shared memory region '{}' is already registered", name));
  }
  return Status::Ok();
}

namespace {
bool OfKind(const SharedMemoryRegionInfo& info, SharedMemoryKind kind) {
  return (info.device_id >= 0) == (kind == SharedMemoryKind::kCuda);
}
const char* KindName(SharedMemoryKind kind) { return kind == SharedMemoryKind::kCuda ? "CUDA" : "system"; }
}  // namespace

void SharedMemoryRegistry::Unregister(const std::string& name, SharedMemoryKind kind) {
  std::vector<std::shared_ptr<Region>> dropped;  // closed after the lock is released
  MutexLock lock(&mu_);
  for (auto it = regions_.begin(); it != regions_.end();) {
    if ((name.empty() || it->first == name) && OfKind(it->second->info, kind)) {
      dropped.push_back(std::move(it->second));
      it = regions_.erase(it);
    } else {
      ++it;
    }
  }
}

Expected<std::vector<SharedMemoryRegionInfo>> SharedMemoryRegistry::Regions(const std::string& name,
                                                                            SharedMemoryKind kind) const {
  MutexLock lock(&mu_);
  std::vector<SharedMemoryRegionInfo> out;
  for (const auto& [n, r] : regions_) {
    if ((name.empty() || n == name) && OfKind(r->info, kind)) out.push_back(r->info);
  }
  if (!name.empty() && out.empty()) {
    return NotFound(fmt::format("Unable to find {} shared memory region: '{}'", KindName(kind), name));
  }
  return out;
}

Expected<std::shared_ptr<SharedMemoryRegistry::Region>> SharedMemoryRegistry::Lookup(const std::string& name,
                                                                                     uint64_t offset,
                                                                                     uint64_t size) const {
  std::shared_ptr<Region> r;
  {
    MutexLock lock(&mu_);
    auto it = regions_.find(name);
    if (it == regions_.end()) {
      return NotFound(fmt::format("Unable to find shared memory region: '{}'; register it first", name));
    }
    r = it->second;
  }
  if (offset > r->info.byte_size || size > r->info.byte_size - offset) {
    return InvalidArgument(fmt::format("shared memory region '{}' holds {} bytes; offset {} + {} bytes is outside it",
                                       name, r->info.byte_size, offset, size));
  }
  return r;
}

Expected<SharedMemoryRegistry::View> SharedMemoryRegistry::Find(const std::string& name, uint64_t offset,
                                                                uint64_t size) const {
  ORTGPU_ASSIGN_OR_RETURN(std::shared_ptr<Region> r, Lookup(name, offset, size));
  View v;
  v.size = static_cast<size_t>(size);
  if (r->cuda != nullptr) {
    auto copy = std::shared_ptr<uint8_t[]>(new uint8_t[std::max<size_t>(v.size, 1)]);
    ORTGPU_RETURN_IF_ERROR(r->cuda->ToHost(copy.get(), r->device_address + offset, v.size, r->info.device_id)
                               .WithContext(fmt::format("reading CUDA shared memory region '{}'", name)));
    v.data = copy.get();
    v.owner = std::move(copy);
    return v;
  }
  v.data = static_cast<uint8_t*>(r->base) + r->lead + offset;
  v.owner = std::move(r);
  return v;
}

Expected<std::optional<DeviceView>> SharedMemoryRegistry::FindOnDevice(const std::string& name, uint64_t offset,
                                                                       uint64_t size) const {
  ORTGPU_ASSIGN_OR_RETURN(std::shared_ptr<Region> r, Lookup(name, offset, size));
  if (r->cuda == nullptr) return std::optional<DeviceView>();
  DeviceView v;
  v.address = r->device_address + offset;
  v.size = static_cast<size_t>(size);
  v.device = r->info.device_id;
  v.where = fmt::format("CUDA shared memory region '{}'", name);
  // A path that needs host bytes copies them once, through the IPC that
  // mapped the region (libcuda), whatever instance reads them.
  v.to_host = [region = r.get()](void* dst, uint64_t address, size_t bytes) {
    return region->cuda->ToHost(dst, address, bytes, region->info.device_id);
  };
  v.owner = std::move(r);
  return std::optional<DeviceView>(std::move(v));
}

Status SharedMemoryRegistry::Write(const std::string& name, uint64_t offset, std::string_view bytes) const {
  ORTGPU_ASSIGN_OR_RETURN(std::shared_ptr<Region> r, Lookup(name, offset, bytes.size()));
  if (bytes.empty()) return Status::Ok();
  if (r->cuda != nullptr) {
    return r->cuda->ToDevice(r->device_address + offset, bytes.data(), bytes.size(), r->info.device_id)
        .WithContext(fmt::format("writing CUDA shared memory region '{}'", name));
  }
  std::memcpy(static_cast<uint8_t*>(r->base) + r->lead + offset, bytes.data(), bytes.size());
  return Status::Ok();
}

Expected<std::optional<SharedMemoryRef>> SharedMemoryRefFromParameters(const std::map<std::string, std::string>& p,
                                                                       const std::string& where) {
  auto region = p.find("shared_memory_region");
  if (region == p.end()) return std::optional<SharedMemoryRef>();
  SharedMemoryRef ref;
  auto name = nlohmann::json::parse(region->second, nullptr, /*allow_exceptions=*/false);
  if (!name.is_string()) return InvalidArgument(fmt::format("{}: shared_memory_region must be a string", where));
  ref.region = name.get<std::string>();
  auto number = [&](const char* key, uint64_t& out, bool required) -> Status {
    auto it = p.find(key);
    if (it == p.end()) {
      return required ? InvalidArgument(fmt::format("{}: {} is required with shared_memory_region", where, key))
                      : Status::Ok();
    }
    auto v = nlohmann::json::parse(it->second, nullptr, /*allow_exceptions=*/false);
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0)) {
      return InvalidArgument(fmt::format("{}: {} must be a non-negative integer", where, key));
    }
    out = v.get<uint64_t>();
    return Status::Ok();
  };
  ORTGPU_RETURN_IF_ERROR(number("shared_memory_byte_size", ref.byte_size, /*required=*/true));
  ORTGPU_RETURN_IF_ERROR(number("shared_memory_offset", ref.offset, /*required=*/false));
  return std::optional<SharedMemoryRef>(ref);
}

std::string SerializedTensorBytes(const Tensor& t) {
  if (t.dtype != DataType::kString) return std::string(reinterpret_cast<const char*>(t.data.data()), t.data.size());
  std::string out;
  size_t total = 0;
  for (const auto& s : t.strings) total += 4 + s.size();
  out.reserve(total);
  for (const auto& s : t.strings) {
    const auto n = static_cast<uint32_t>(s.size());
    out.append(reinterpret_cast<const char*>(&n), 4);
    out.append(s);
  }
  return out;
}

Status ParseSerializedStrings(std::string_view raw, Tensor& t) {
  size_t pos = 0;
  while (pos < raw.size()) {
    if (raw.size() - pos < 4) {
      return InvalidArgument(fmt::format("input '{}': BYTES data ends inside an element's 4-byte length", t.name));
    }
    uint32_t n = 0;
    std::memcpy(&n, raw.data() + pos, 4);
    pos += 4;
    if (raw.size() - pos < n) {
      return InvalidArgument(fmt::format("input '{}': a BYTES element says {} bytes but only {} remain", t.name, n,
                                         raw.size() - pos));
    }
    t.strings.emplace_back(raw.substr(pos, n));
    pos += n;
  }
  return Status::Ok();
}

Status ReadSharedMemoryInputs(InferRequest& request, const SharedMemoryRegistry& shm) {
  for (Tensor& t : request.inputs) {
    auto it = request.shared_memory_inputs.find(t.name);
    if (it == request.shared_memory_inputs.end()) continue;
    const std::string where = fmt::format("input '{}'", t.name);
    ORTGPU_ASSIGN_OR_RETURN(auto ref, SharedMemoryRefFromParameters(it->second, where));
    if (!ref) continue;
    if (t.dtype != DataType::kString) {
      // A CUDA region's bytes stay on the device (no copy); the size check
      // is the same as for host bytes.
      ORTGPU_ASSIGN_OR_RETURN(auto device, shm.FindOnDevice(ref->region, ref->offset, ref->byte_size));
      if (device) {
        t.data.clear();
        t.device = std::move(*device);
        if (Status st = ValidateTensorSize(t); !st.ok()) {
          return InvalidArgument(fmt::format("{}: shared_memory_byte_size is {}, but shape [{}] of {} needs {}", where,
                                             ref->byte_size, ShapeToString(t.shape), KServeName(t.dtype),
                                             static_cast<size_t>(t.element_count()) * ElementSize(t.dtype)));
        }
        continue;
      }
    }
    ORTGPU_ASSIGN_OR_RETURN(auto view, shm.Find(ref->region, ref->offset, ref->byte_size));
    if (t.dtype == DataType::kString) {
      ORTGPU_RETURN_IF_ERROR(
          ParseSerializedStrings(std::string_view(reinterpret_cast<const char*>(view.data), view.size), t));
      if (static_cast<int64_t>(t.strings.size()) != t.element_count()) {
        return InvalidArgument(fmt::format("{}: the region holds {} BYTES elements, but shape [{}] needs {}", where,
                                           t.strings.size(), ShapeToString(t.shape), t.element_count()));
      }
      continue;
    }
    const size_t want = static_cast<size_t>(t.element_count()) * ElementSize(t.dtype);
    if (view.size != want) {
      return InvalidArgument(fmt::format("{}: shared_memory_byte_size is {}, but shape [{}] of {} needs {}", where,
                                         view.size, ShapeToString(t.shape), KServeName(t.dtype), want));
    }
    t.data.Borrow(view.owner, view.data, view.size);  // read in place, no copy
  }
  request.shared_memory_inputs.clear();
  return Status::Ok();
}

Status ResolveDeviceOutputs(InferRequest& request, const SharedMemoryRegistry& shm) {
  for (const RequestedOutput& o : request.outputs) {
    if (o.parameters.count("classification") > 0) continue;  // classified on the host
    if (o.parameters.count("shared_memory_region") == 0) continue;  // the common case: nothing to resolve
    ORTGPU_ASSIGN_OR_RETURN(auto ref, SharedMemoryRefFromParameters(o.parameters, fmt::format("output '{}'", o.name)));
    if (!ref) continue;
    ORTGPU_ASSIGN_OR_RETURN(auto device, shm.FindOnDevice(ref->region, ref->offset, ref->byte_size));
    if (device) request.device_outputs[o.name] = std::move(*device);
  }
  return Status::Ok();
}

Status WriteSharedMemoryOutputs(InferResponse& response, const std::vector<RequestedOutput>& requested,
                                const SharedMemoryRegistry& shm) {
  for (size_t i = 0; i < response.outputs.size(); ++i) {
    const Tensor& t = response.outputs[i];
    for (const RequestedOutput& r : requested) {
      if (r.name != t.name) continue;
      const std::string where = fmt::format("output '{}'", t.name);
      ORTGPU_ASSIGN_OR_RETURN(auto ref, SharedMemoryRefFromParameters(r.parameters, where));
      if (!ref) break;
      // Written device to device by the instance already: only recorded.
      const size_t written = t.on_device() ? static_cast<size_t>(t.element_count()) * ElementSize(t.dtype) : 0;
      const std::string bytes = t.on_device() ? std::string() : SerializedTensorBytes(t);
      const size_t size = t.on_device() ? written : bytes.size();
      if (size > ref->byte_size) {
        return InvalidArgument(fmt::format("{} has {} bytes but its shared memory region '{}' takes {}; give a larger "
                                           "shared_memory_byte_size",
                                           where, size, ref->region, ref->byte_size));
      }
      if (!t.on_device()) ORTGPU_RETURN_IF_ERROR(shm.Write(ref->region, ref->offset, bytes));
      if (response.output_parameters.size() < response.outputs.size()) {
        response.output_parameters.resize(response.outputs.size());
      }
      Parameters& p = response.output_parameters[i];
      p["shared_memory_region"] = nlohmann::json(ref->region).dump();
      p["shared_memory_byte_size"] = std::to_string(size);
      if (ref->offset > 0) p["shared_memory_offset"] = std::to_string(ref->offset);
      break;
    }
  }
  return Status::Ok();
}

}  // namespace ortgpu::serve
