// The settings a client may read and change while the server runs, shared
// by the HTTP and gRPC front ends: Triton's logging extension
// (GET/POST /v2/logging, the LogSettings RPC) and trace extension
// (/v2/trace/setting, the TraceSetting RPC).
//
// LogSettings drives spdlog's level: log_verbose_level > 0 is debug (2 and
// more: trace), else the lowest of log_info / log_warning / log_error that is
// on, else off. ortgpu logs to stderr only, so log_file must stay "".
// TraceSettings stores Triton's trace settings, globally and per model;
// ortgpu records no traces, so any trace_level but OFF is Unimplemented.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "serve/shared_memory.h"
#include "status/status.h"
#include "sys/mutex.h"

namespace ortgpu::serve {

class LogSettings {
 public:
  using Value = std::variant<bool, uint32_t, std::string>;
  using Map = std::map<std::string, Value>;

  // Starts from spdlog's current level.
  LogSettings();

  // Every setting: log_file, log_info, log_warning, log_error,
  // log_verbose_level, log_format.
  Map Get() const;
  // Applies `changes` (all or none): InvalidArgument naming the setting when
  // one is unknown, has the wrong type or a value ortgpu cannot honour.
  Status Update(const Map& changes);

 private:
  mutable Mutex mu_;
  Map values_ GUARDED_BY(mu_);
};

class TraceSettings {
 public:
  using Map = std::map<std::string, std::vector<std::string>>;

  TraceSettings();
  // The settings in force for `model` ("" = the global ones): the model's
  // own values over the global ones.
  Map Get(const std::string& model) const;
  // Applies `changes` to `model` ("" = global); a setting with no values
  // clears the model's own value (the global one applies again).
  Status Update(const std::string& model, const Map& changes);

 private:
  mutable Mutex mu_;
  Map global_ GUARDED_BY(mu_);
  std::map<std::string, Map> models_ GUARDED_BY(mu_);
};

// What clients change while the server runs, as the server owns it and
// hands it to both front ends: the log and trace settings and the system
// shared memory regions registered.
struct RuntimeSettings {
  LogSettings log;
  TraceSettings trace;
  SharedMemoryRegistry system_shm;
};

}  // namespace ortgpu::serve
