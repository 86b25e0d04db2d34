// Runtime: the process-wide ONNX Runtime environment (one Ort::Env), its
// version and providers, and a capture of everything ORT logs.
//
// ORT logs through one callback per process; Runtime keeps the last records
// in a bounded buffer with sequence numbers, so a caller can ask "what did ORT
// say while I created this session" (LogCapture). Safe to use from any
// thread; the environment lives until the process exits.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace ortgpu {

struct OrtLogRecord {
  uint64_t seq = 0;
  int severity = 0;  // 0 verbose, 1 info, 2 warning, 3 error, 4 fatal
  std::string category;
  std::string log_id;
  std::string code_location;
  std::string message;
};

class Runtime {
 public:
  // The environment, created on first use.
  static Runtime& Get();

  // "1.29.0", from the loaded libonnxruntime (not the headers).
  std::string Version() const;
  // ORT's GetAvailableProviders(): what this build can add, not what works.
  std::vector<std::string> AvailableProviders() const;
  // ORT's EP devices (Env::GetEpDevices): "CPUExecutionProvider on CPU
  // (vendor Intel, id 0x8086)". Plugin EPs appear once registered.
  std::vector<std::string> EpDevices() const;
  // The file libonnxruntime was loaded from.
  std::string LibraryPath() const;

  // Changes the process-wide log severity (0 verbose .. 4 fatal). doctor
  // raises it to info so ORT's placement decisions reach the log.
  void SetLogSeverity(int severity);

  // Sequence number the next log record will get.
  uint64_t NextLogSeq() const;
  // Records with seq >= `from`, oldest first (at most the last 4096 kept).
  std::vector<OrtLogRecord> LogsSince(uint64_t from) const;

  // Called by ORT's logging callback.
  void Append(OrtLogRecord record);

  // The Ort::Env, as an opaque pointer for code in ort/ (ort/ort_env.h).
  void* env_handle() const { return env_; }

 private:
  Runtime();
  void* env_ = nullptr;  // Ort::Env*, never freed (ORT must outlive statics)
  mutable std::mutex mu_;
  uint64_t next_seq_ = 0;            // guarded by mu_
  std::vector<OrtLogRecord> logs_;   // guarded by mu_, ring of kMaxLogs
};

// Collects ORT's log records from its construction on.
class LogCapture {
 public:
  LogCapture() : from_(Runtime::Get().NextLogSeq()) {}
  std::vector<OrtLogRecord> Records() const { return Runtime::Get().LogsSince(from_); }
  // Whether `records` (from Records()) hold every record since the capture
  // began: false once the bounded buffer dropped some of them.
  bool Complete(const std::vector<OrtLogRecord>& records) const {
    return records.empty() ? Runtime::Get().NextLogSeq() == from_ : records.front().seq == from_;
  }

 private:
  uint64_t from_;
};

}  // namespace ortgpu
