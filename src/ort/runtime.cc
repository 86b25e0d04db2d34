#include "ort/runtime.h"

#include <dlfcn.h>

#include <cstdio>

#include <onnxruntime_cxx_api.h>

namespace ortgpu {
namespace {

constexpr size_t kMaxLogs = 4096;

void OrtLog(void* param, OrtLoggingLevel severity, const char* category, const char* logid,
            const char* code_location, const char* message) {
  OrtLogRecord r;
  r.severity = static_cast<int>(severity);
  r.category = category ? category : "";
  r.log_id = logid ? logid : "";
  r.code_location = code_location ? code_location : "";
  r.message = message ? message : "";
  static_cast<Runtime*>(param)->Append(std::move(r));
}

}  // namespace

Runtime::Runtime() {
  // Warning is the process default; sessions that want more (doctor) raise
  // their own severity through SessionOptions::log_severity.
  env_ = new Ort::Env(ORT_LOGGING_LEVEL_WARNING, "ortgpu", OrtLog, this);
}

Runtime& Runtime::Get() {
  static Runtime* runtime = new Runtime();
  return *runtime;
}

std::string Runtime::Version() const { return Ort::GetVersionString(); }

std::vector<std::string> Runtime::AvailableProviders() const { return Ort::GetAvailableProviders(); }

std::vector<std::string> Runtime::EpDevices() const {
  std::vector<std::string> out;
  try {
    for (const auto& d : static_cast<Ort::Env*>(env_)->GetEpDevices()) {
      const auto hw = d.Device();
      const char* type = hw.Type() == OrtHardwareDeviceType_GPU   ? "GPU"
                         : hw.Type() == OrtHardwareDeviceType_NPU ? "NPU"
                                                                  : "CPU";
      char ids[64];
      std::snprintf(ids, sizeof(ids), "vendor id 0x%04x, device id 0x%04x", hw.VendorId(), hw.DeviceId());
      out.push_back(std::string(d.EpName()) + " on " + type + " (" + (hw.Vendor() ? hw.Vendor() : "") + ", " + ids + ")");
    }
  } catch (const Ort::Exception&) {
    // An ORT without the EP-device API lists nothing; doctor says so.
  }
  return out;
}

std::string Runtime::LibraryPath() const {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&OrtGetApiBase), &info) != 0 && info.dli_fname) return info.dli_fname;
  return "";
}

void Runtime::SetLogSeverity(int severity) {
  static_cast<Ort::Env*>(env_)->UpdateEnvWithCustomLogLevel(static_cast<OrtLoggingLevel>(severity));
}

uint64_t Runtime::NextLogSeq() const {
  std::lock_guard<std::mutex> lock(mu_);
  return next_seq_;
}

std::vector<OrtLogRecord> Runtime::LogsSince(uint64_t from) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<OrtLogRecord> out;
  for (const auto& r : logs_) {
    if (r.seq >= from) out.push_back(r);
  }
  return out;
}

void Runtime::Append(OrtLogRecord record) {
  std::lock_guard<std::mutex> lock(mu_);
  record.seq = next_seq_++;
  if (logs_.size() >= kMaxLogs) logs_.erase(logs_.begin(), logs_.begin() + kMaxLogs / 4);
  logs_.push_back(std::move(record));
}

}  // namespace ortgpu
