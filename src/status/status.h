// Status: the outcome of an operation that can fail, carried across module
// boundaries instead of exceptions (after leveldb's Status and absl's Status).
//
// A Status is OK, or a Code with a message written for the person who will
// read it: what was seen, why it matters, what to do, and, where a caller
// decides on the failure, a Reason. Code decides how the failure reaches the
// outside (HTTP status, exit code); Reason is for the few decisions inside
// ortgpu that a Code is too coarse for. No decision reads the message: its
// words are for people and may change. Cheap to copy when OK. Thread-safe as
// a value type: distinct objects may be used from any thread.
#pragma once

#include <string>
#include <string_view>
#include <utility>

namespace ortgpu {

enum class Code {
  kOk = 0,
  kInvalidArgument,     // the caller's input is wrong (bad flag, bad shape, bad JSON)
  kNotFound,            // a named thing does not exist (file, model, library)
  kAlreadyExists,
  kFailedPrecondition,  // the system is not in a state to do it (model not ready)
  kUnavailable,         // a dependency is missing or down (no GPU, EP failed to load)
  kResourceExhausted,   // out of memory, queue full, body too large
  kDeadlineExceeded,    // a timeout passed
  kUnimplemented,       // valid but not supported (an ONNX type we cannot serve)
  kCancelled,           // stopped on request (shutdown)
  kInternal,            // a bug or an unexpected failure inside a dependency
};

// Returns the stable lower-case name of `code` ("invalid_argument"), used in
// JSON output and as a metric label.
std::string_view CodeName(Code code);

// Why a failure happened, for a caller that acts on it. Set where the error
// is made (ort/ort_status.cc recognises ORT's failures once, where they are
// converted) and kept by WithContext and WithMessage, so the decision never
// depends on the message's wording. Most failures have none: their Code says
// all a caller needs.
enum class Reason {
  kNone = 0,
  // ORT will not capture a CUDA graph of this model (compute nodes outside
  // the CUDA EP, control flow): the model can still run without graphs, and
  // serve loads it so (model_loader.cc).
  kCudaGraphRefused,
  // A kernel rejected the inputs while running: their shapes or values suit
  // the declared dims but not the graph. Always InvalidArgument; serve names
  // the inputs and the declared shapes (rejection_runner.h).
  kInputsRejectedWhileRunning,
};

// "none", "cuda_graph_refused", "inputs_rejected_while_running": for logs
// and test output.
std::string_view ReasonName(Reason reason);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  // REQUIRES: `reason` is kNone when `code` is kOk.
  Status(Code code, std::string message, Reason reason = Reason::kNone)
      : code_(code), reason_(code == Code::kOk ? Reason::kNone : reason), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  // kNone when OK or when the failure has no reason a caller acts on.
  Reason reason() const { return reason_; }
  const std::string& message() const { return message_; }

  // "invalid_argument: <message>", or "ok". The reason is not shown: the
  // message already says it in words.
  std::string ToString() const;

  // Returns a copy whose message is "<context>: <message>"; code and reason
  // are kept.
  Status WithContext(std::string_view context) const;
  // Returns a copy whose message is `message`; code and reason are kept. An
  // OK status stays OK.
  Status WithMessage(std::string message) const;
  // Returns a copy with `reason`; an OK status stays OK (and without one).
  Status WithReason(Reason reason) const;

  // Explicitly drops the status where ignoring a failure is intended.
  void IgnoreError() const {}

 private:
  Code code_ = Code::kOk;
  Reason reason_ = Reason::kNone;
  std::string message_;
};

inline Status InvalidArgument(std::string m) { return {Code::kInvalidArgument, std::move(m)}; }
inline Status NotFound(std::string m) { return {Code::kNotFound, std::move(m)}; }
inline Status FailedPrecondition(std::string m) { return {Code::kFailedPrecondition, std::move(m)}; }
inline Status Unavailable(std::string m) { return {Code::kUnavailable, std::move(m)}; }
inline Status ResourceExhausted(std::string m) { return {Code::kResourceExhausted, std::move(m)}; }
inline Status DeadlineExceeded(std::string m) { return {Code::kDeadlineExceeded, std::move(m)}; }
inline Status Unimplemented(std::string m) { return {Code::kUnimplemented, std::move(m)}; }
inline Status Cancelled(std::string m) { return {Code::kCancelled, std::move(m)}; }
inline Status Internal(std::string m) { return {Code::kInternal, std::move(m)}; }

// The one place where error codes meet the outside world's numbers
// (after Triton's StatusCodeToTritonCode): HTTP status and gRPC status code
// (grpc::StatusCode's numbers) for `serve`, process exit code for the
// commands.
// `refusal` names the HTTP-only outcomes no Code stands for: a method the
// endpoint does not take (405), a body past the limit (413), a request
// without the bearer token it needs (401) and one from a Host or Origin the
// server does not serve (403).
enum class HttpRefusal { kNone, kMethodNotAllowed, kBodyTooLarge, kUnauthorized, kForbidden };
int HttpStatusFor(Code code, HttpRefusal refusal = HttpRefusal::kNone);
int GrpcCodeFor(Code code);
int ExitCodeFor(Code code);

}  // namespace ortgpu

// Returns from the enclosing function if `expr` yields a non-OK Status.
#define ORTGPU_RETURN_IF_ERROR(expr)            \
  do {                                          \
    ::ortgpu::Status _st = (expr);              \
    if (!_st.ok()) return _st;                  \
  } while (0)
