// Status: the outcome of an operation that can fail, carried across module
// boundaries instead of exceptions (after leveldb's Status and absl's Status).
//
// A Status is OK, or a Code with a message written for the person who will
// read it: what was seen, why it matters, what to do. Cheap to copy when OK.
// Thread-safe as a value type: distinct objects may be used from any thread.
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

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }

  // "invalid_argument: <message>", or "ok".
  std::string ToString() const;

  // Returns a copy whose message is "<context>: <message>".
  Status WithContext(std::string_view context) const;

  // Explicitly drops the status where ignoring a failure is intended.
  void IgnoreError() const {}

 private:
  Code code_ = Code::kOk;
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
