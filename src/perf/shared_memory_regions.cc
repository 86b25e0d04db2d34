#include "perf/shared_memory_regions.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <boost/beast/core/detail/base64.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace ortgpu::perf {
namespace {

using nlohmann::json;

std::string Base64(const std::string& bytes) {
  std::string out(boost::beast::detail::base64::encoded_size(bytes.size()), '\0');
  out.resize(boost::beast::detail::base64::encode(out.data(), bytes.data(), bytes.size()));
  return out;
}

// The server's own words, when it sent a KServe error body.
std::string ServerError(const FetchResult& r) {
  auto j = json::parse(r.body, nullptr, false);
  if (j.is_object() && j.contains("error") && j["error"].is_string()) return j["error"].get<std::string>();
  return r.body.substr(0, 200);
}

}  // namespace

Expected<SharedMemoryMode> ParseSharedMemoryMode(const std::string& text) {
  if (text == "none") return SharedMemoryMode::kNone;
  if (text == "system") return SharedMemoryMode::kSystem;
  if (text == "cuda") return SharedMemoryMode::kCuda;
  return InvalidArgument("--shared-memory '" + text + "': use none, system or cuda");
}

Expected<std::unique_ptr<SharedMemoryRegions>> SharedMemoryRegions::Create(const SharedMemoryOptions& options,
                                                                           const std::vector<Tensor>& inputs,
                                                                           size_t output_count, RegisterPost post) {
  std::unique_ptr<SharedMemoryRegions> r(new SharedMemoryRegions());
  r->options_ = options;
  r->post_ = std::move(post);
  if (r->options_.prefix.empty()) r->options_.prefix = fmt::format("ortgpu_perf_{}", ::getpid());
  if (r->options_.mode == SharedMemoryMode::kCuda && r->options_.cuda == nullptr) {
    r->options_.cuda = gpu::MakeDriverCudaIpc();
  }
  uint64_t input_bytes = 0;
  for (const Tensor& t : inputs) {
    if (t.dtype == DataType::kString) {
      return InvalidArgument("input '" + t.name + "' is BYTES: --shared-memory takes fixed-size inputs only");
    }
    r->plan_.inputs.push_back({r->options_.prefix + "_input", input_bytes, t.byte_size()});
    input_bytes += t.byte_size();
  }
  for (size_t i = 0; i < output_count; ++i) {
    r->plan_.outputs.push_back({r->options_.prefix + "_output", i * options.output_bytes, options.output_bytes});
  }
  r->input_.name = r->options_.prefix + "_input";
  r->output_.name = r->options_.prefix + "_output";
  ORTGPU_RETURN_IF_ERROR(r->Make(r->input_, std::max<uint64_t>(input_bytes, 1)));
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    const uint64_t offset = r->plan_.inputs[i].offset;
    if (r->input_.host != nullptr) {
      std::memcpy(static_cast<uint8_t*>(r->input_.host) + offset, t.data.data(), t.byte_size());
    } else {
      ORTGPU_RETURN_IF_ERROR(
          r->options_.cuda->ToDevice(r->input_.device_address + offset, t.data.data(), t.byte_size(), options.device));
    }
  }
  ORTGPU_RETURN_IF_ERROR(r->Make(r->output_, std::max<uint64_t>(output_count * options.output_bytes, 1)));
  ORTGPU_RETURN_IF_ERROR(r->Register(r->input_));
  ORTGPU_RETURN_IF_ERROR(r->Register(r->output_));
  return r;
}

Status SharedMemoryRegions::Make(Region& r, uint64_t bytes) {
  r.bytes = bytes;
  if (options_.mode == SharedMemoryMode::kCuda) {
    auto address = options_.cuda->Allocate(bytes, options_.device);
    if (!address) return address.status().WithContext("--shared-memory cuda on GPU " + std::to_string(options_.device));
    r.device_address = *address;
    return Status::Ok();
  }
  const std::string key = "/" + r.name;
  const int fd = ::shm_open(key.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) {
    return Unavailable(fmt::format("--shared-memory system: cannot create the shared memory object {} ({}); is /dev/shm "
                                   "mounted and writable?",
                                   key, std::strerror(errno)));
  }
  const bool sized = ::ftruncate(fd, static_cast<off_t>(bytes)) == 0;
  void* base = sized ? ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
  const int err = errno;
  ::close(fd);
  if (base == MAP_FAILED) {
    ::shm_unlink(key.c_str());
    return ResourceExhausted(fmt::format("--shared-memory system: cannot size or map {} to {} bytes ({}); a container "
                                         "needs a larger --shm-size",
                                         key, bytes, std::strerror(err)));
  }
  r.host = base;
  return Status::Ok();
}

Status SharedMemoryRegions::Register(Region& r) {
  json body;
  std::string target;
  if (options_.mode == SharedMemoryMode::kCuda) {
    auto handle = options_.cuda->ExportHandle(r.device_address, options_.device);
    if (!handle) return handle.status().WithContext("--shared-memory cuda");
    body = {{"raw_handle", {{"b64", Base64(*handle)}}}, {"device_id", options_.device}, {"byte_size", r.bytes}};
    target = "/v2/cudasharedmemory/region/" + r.name + "/register";
  } else {
    body = {{"key", "/" + r.name}, {"offset", 0}, {"byte_size", r.bytes}};
    target = "/v2/systemsharedmemory/region/" + r.name + "/register";
  }
  ORTGPU_ASSIGN_OR_RETURN(FetchResult answer, post_(target, body.dump()));
  if (answer.status != 200) {
    return FailedPrecondition(fmt::format("the server refused to register shared memory region '{}' (HTTP {}: {}); "
                                          "it needs Triton's {} shared memory extension{}",
                                          r.name, answer.status, ServerError(answer),
                                          options_.mode == SharedMemoryMode::kCuda ? "CUDA" : "system",
                                          options_.mode == SharedMemoryMode::kCuda
                                              ? " and to run on this machine with the same GPU"
                                              : " and to run on this machine (the same /dev/shm)"));
  }
  r.registered = true;
  return Status::Ok();
}

void SharedMemoryRegions::Release(Region& r) {
  if (r.registered) {
    const char* kind = options_.mode == SharedMemoryMode::kCuda ? "cuda" : "system";
    (void)post_(fmt::format("/v2/{}sharedmemory/region/{}/unregister", kind, r.name), "{}");
    r.registered = false;
  }
  if (r.host != nullptr) {
    ::munmap(r.host, r.bytes);
    ::shm_unlink(("/" + r.name).c_str());
    r.host = nullptr;
  }
  if (r.device_address != 0) {
    (void)options_.cuda->Free(r.device_address, options_.device);
    r.device_address = 0;
  }
}

SharedMemoryRegions::~SharedMemoryRegions() {
  Release(input_);
  Release(output_);
}

Expected<std::string> SharedMemoryRegions::OutputBytes() const {
  std::string out(output_.bytes, '\0');
  if (output_.host != nullptr) {
    std::memcpy(out.data(), output_.host, output_.bytes);
    return out;
  }
  ORTGPU_RETURN_IF_ERROR(options_.cuda->ToHost(out.data(), output_.device_address, output_.bytes, options_.device));
  return out;
}

}  // namespace ortgpu::perf
