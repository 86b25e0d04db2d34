#include "serve/protocol/route.h"

#include <vector>

#include <fmt/format.h>

namespace ortgpu::serve::protocol {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

Expected<std::string> PercentDecode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    int hi = i + 2 < s.size() ? HexValue(s[i + 1]) : -1;
    int lo = i + 2 < s.size() ? HexValue(s[i + 2]) : -1;
    if (hi < 0 || lo < 0) {
      return InvalidArgument(fmt::format("URL segment '{}' has a bad percent-encoding at offset {}", s, i));
    }
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

std::string Printable(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

Status ValidateVersion(std::string_view v) {
  if (v.empty() || v.size() > 19 || v.find_first_not_of("0123456789") != std::string_view::npos) {
    return InvalidArgument(fmt::format("model version '{}' is not a decimal integer; use e.g. /versions/1",
                                       Printable(v)));
  }
  return Status::Ok();
}

Expected<Route> ModelRoute(std::string model, std::string version, std::string_view action) {
  ORTGPU_RETURN_IF_ERROR(ValidateModelName(model));
  if (!version.empty() || action == "versions") ORTGPU_RETURN_IF_ERROR(ValidateVersion(version));
  Route r;
  r.model = std::move(model);
  r.version = std::move(version);
  r.method = "GET";
  if (action.empty()) {
    r.endpoint = Endpoint::kModelMetadata;
  } else if (action == "ready") {
    r.endpoint = Endpoint::kModelReady;
  } else if (action == "config") {
    r.endpoint = Endpoint::kModelConfig;
  } else if (action == "stats") {
    r.endpoint = Endpoint::kModelStats;
  } else if (action == "infer") {
    r.endpoint = Endpoint::kInfer;
    r.method = "POST";
  } else if (action == "trace/setting") {
    r.endpoint = Endpoint::kTraceSetting;
    r.method = "GET, POST";
  } else {
    return NotFound(fmt::format("no endpoint '{}' for a model; use ready, config, stats or infer", Printable(action)));
  }
  return r;
}

}  // namespace

std::string_view EndpointName(Endpoint e) {
  switch (e) {
    case Endpoint::kHealthLive: return "health_live";
    case Endpoint::kHealthReady: return "health_ready";
    case Endpoint::kServerMetadata: return "server_metadata";
    case Endpoint::kModelMetadata: return "model_metadata";
    case Endpoint::kModelReady: return "model_ready";
    case Endpoint::kModelConfig: return "model_config";
    case Endpoint::kModelStats: return "model_stats";
    case Endpoint::kAllModelStats: return "all_model_stats";
    case Endpoint::kInfer: return "infer";
    case Endpoint::kRepositoryIndex: return "repository_index";
    case Endpoint::kRepositoryLoad: return "repository_load";
    case Endpoint::kRepositoryUnload: return "repository_unload";
    case Endpoint::kLogging: return "logging";
    case Endpoint::kTraceSetting: return "trace_setting";
    case Endpoint::kSystemShmStatus: return "system_shared_memory_status";
    case Endpoint::kSystemShmRegister: return "system_shared_memory_register";
    case Endpoint::kSystemShmUnregister: return "system_shared_memory_unregister";
    case Endpoint::kCudaShmStatus: return "cuda_shared_memory_status";
    case Endpoint::kCudaShmRegister: return "cuda_shared_memory_register";
    case Endpoint::kCudaShmUnregister: return "cuda_shared_memory_unregister";
  }
  return "unknown";
}

Status ValidateModelName(std::string_view name) {
  if (name.empty()) return InvalidArgument("model name is empty");
  if (name.size() > 255) return InvalidArgument("model name is longer than 255 bytes");
  if (name == "." || name == "..") {
    return InvalidArgument(fmt::format("model name '{}' is not allowed: it names a directory, not a model", name));
  }
  for (unsigned char c : name) {
    if (c == '/' || c == '\\' || c < 0x20 || c == 0x7f) {
      return InvalidArgument(fmt::format(
          "model name '{}' contains '{}', which is not allowed in a model name (names are directory names in "
          "the model repository)",
          Printable(name), Printable(std::string_view(reinterpret_cast<const char*>(&c), 1))));
    }
  }
  return Status::Ok();
}

Expected<Route> MatchRoute(std::string_view target) {
  std::string_view path = target.substr(0, target.find('?'));
  if (path.empty() || path[0] != '/') return NotFound("request target must be an absolute path such as /v2");
  // Raw segments: split before decoding, so an encoded '/' stays inside its
  // segment and is refused by ValidateModelName instead of re-routing.
  std::vector<std::string_view> raw;
  size_t start = 1;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    raw.push_back(path.substr(start, end - start));
    start = end + 1;
  }
  if (!raw.empty() && raw.back().empty() && raw.size() > 1) raw.pop_back();  // trailing slash
  std::vector<std::string> seg;
  for (std::string_view s : raw) {
    ORTGPU_ASSIGN_OR_RETURN(std::string d, PercentDecode(s));
    seg.push_back(std::move(d));
  }
  auto not_found = [&] {
    return NotFound(fmt::format("no endpoint at '{}'; see docs/PROTOCOL.md for the KServe v2 endpoints",
                                Printable(path)));
  };
  size_t n = seg.size();
  if (n == 0 || seg[0] != "v2") return not_found();
  Route r;
  r.method = "GET";
  if (n == 1) {
    r.endpoint = Endpoint::kServerMetadata;
    return r;
  }
  if (seg[1] == "health" && n == 3) {
    if (seg[2] == "live") r.endpoint = Endpoint::kHealthLive;
    else if (seg[2] == "ready") r.endpoint = Endpoint::kHealthReady;
    else return not_found();
    return r;
  }
  if (n == 2 && seg[1] == "logging") {
    r.endpoint = Endpoint::kLogging;
    r.method = "GET, POST";
    return r;
  }
  if (n == 3 && seg[1] == "trace" && seg[2] == "setting") {
    r.endpoint = Endpoint::kTraceSetting;
    r.method = "GET, POST";
    return r;
  }
  if (seg[1] == "systemsharedmemory" || seg[1] == "cudasharedmemory") {
    // [/region/{r}]/{status|register|unregister}
    const bool system = seg[1] == "systemsharedmemory";
    if (n != 3 && !(n == 5 && seg[2] == "region")) return not_found();
    if (n == 5) {
      ORTGPU_RETURN_IF_ERROR(ValidateModelName(seg[3]).WithContext("shared memory region name"));
      r.region = seg[3];
    }
    const std::string& action = seg[n - 1];
    if (action == "status") {
      r.endpoint = system ? Endpoint::kSystemShmStatus : Endpoint::kCudaShmStatus;
    } else if (action == "register" && n == 5) {
      r.endpoint = system ? Endpoint::kSystemShmRegister : Endpoint::kCudaShmRegister;
      r.method = "POST";
    } else if (action == "unregister") {
      r.endpoint = system ? Endpoint::kSystemShmUnregister : Endpoint::kCudaShmUnregister;
      r.method = "POST";
    } else {
      return not_found();
    }
    return r;
  }
  if (seg[1] == "repository" && n >= 3) {
    r.method = "POST";
    if (n == 3 && seg[2] == "index") {
      r.endpoint = Endpoint::kRepositoryIndex;
      return r;
    }
    if (n == 5 && seg[2] == "models" && (seg[4] == "load" || seg[4] == "unload")) {
      ORTGPU_RETURN_IF_ERROR(ValidateModelName(seg[3]));
      r.endpoint = seg[4] == "load" ? Endpoint::kRepositoryLoad : Endpoint::kRepositoryUnload;
      r.model = seg[3];
      return r;
    }
    return not_found();
  }
  if (seg[1] != "models" || n < 3) return not_found();
  if (n == 3 && seg[2] == "stats") {
    r.endpoint = Endpoint::kAllModelStats;
    return r;
  }
  // /v2/models/{m}, /v2/models/{m}/{action}, /v2/models/{m}/versions/{v}[/{action}]
  if (n >= 5 && seg[n - 2] == "trace" && seg[n - 1] == "setting" && (n == 5 || (n == 7 && seg[3] == "versions"))) {
    return ModelRoute(seg[2], n == 7 ? seg[4] : "", "trace/setting");
  }
  if (n == 3) return ModelRoute(seg[2], "", "");
  if (n == 4) {
    if (seg[3] == "versions") return ModelRoute(seg[2], "", "versions");
    return ModelRoute(seg[2], "", seg[3]);
  }
  if (seg[3] != "versions" || n > 6) return not_found();
  return ModelRoute(seg[2], seg[4], n == 6 ? std::string_view(seg[5]) : std::string_view());
}

}  // namespace ortgpu::serve::protocol
