#include "status/status.h"

namespace ortgpu {

std::string_view CodeName(Code code) {
  switch (code) {
    case Code::kOk: return "ok";
    case Code::kInvalidArgument: return "invalid_argument";
    case Code::kNotFound: return "not_found";
    case Code::kAlreadyExists: return "already_exists";
    case Code::kFailedPrecondition: return "failed_precondition";
    case Code::kUnavailable: return "unavailable";
    case Code::kResourceExhausted: return "resource_exhausted";
    case Code::kDeadlineExceeded: return "deadline_exceeded";
    case Code::kUnimplemented: return "unimplemented";
    case Code::kCancelled: return "cancelled";
    case Code::kInternal: return "internal";
  }
  return "unknown";
}

std::string_view ReasonName(Reason reason) {
  switch (reason) {
    case Reason::kNone: return "none";
    case Reason::kCudaGraphRefused: return "cuda_graph_refused";
    case Reason::kInputsRejectedWhileRunning: return "inputs_rejected_while_running";
  }
  return "unknown";
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  return std::string(CodeName(code_)) + ": " + message_;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  return Status(code_, std::string(context) + ": " + message_, reason_);
}

Status Status::WithMessage(std::string message) const {
  if (ok()) return *this;
  return Status(code_, std::move(message), reason_);
}

Status Status::WithReason(Reason reason) const { return Status(code_, message_, reason); }

int HttpStatusFor(Code code, HttpRefusal refusal) {
  if (refusal == HttpRefusal::kMethodNotAllowed) return 405;
  if (refusal == HttpRefusal::kBodyTooLarge) return 413;
  if (refusal == HttpRefusal::kUnauthorized) return 401;
  if (refusal == HttpRefusal::kForbidden) return 403;
  switch (code) {
    case Code::kOk: return 200;
    case Code::kInvalidArgument: return 400;
    case Code::kNotFound: return 404;
    case Code::kAlreadyExists: return 409;
    case Code::kFailedPrecondition: return 400;
    case Code::kUnavailable: return 503;
    case Code::kResourceExhausted: return 503;
    case Code::kDeadlineExceeded: return 504;
    case Code::kUnimplemented: return 501;
    case Code::kCancelled: return 503;
    case Code::kInternal: return 500;
  }
  return 500;
}

// The gRPC code for the same condition as HttpStatusFor's status (gRPC's
// own HTTP mapping: 400 INVALID_ARGUMENT, 404 NOT_FOUND, 503 UNAVAILABLE ...).
int GrpcCodeFor(Code code) {
  switch (code) {
    case Code::kOk: return 0;                   // OK
    case Code::kCancelled: return 1;            // CANCELLED
    case Code::kInvalidArgument: return 3;      // INVALID_ARGUMENT
    case Code::kDeadlineExceeded: return 4;     // DEADLINE_EXCEEDED
    case Code::kNotFound: return 5;             // NOT_FOUND
    case Code::kAlreadyExists: return 6;        // ALREADY_EXISTS
    case Code::kResourceExhausted: return 8;    // RESOURCE_EXHAUSTED
    case Code::kFailedPrecondition: return 9;   // FAILED_PRECONDITION
    case Code::kUnimplemented: return 12;       // UNIMPLEMENTED
    case Code::kInternal: return 13;            // INTERNAL
    case Code::kUnavailable: return 14;         // UNAVAILABLE
  }
  return 13;
}

// 0 success, 1 a check or run failed, 2 bad usage (the caller's input).
int ExitCodeFor(Code code) {
  switch (code) {
    case Code::kOk: return 0;
    case Code::kInvalidArgument: return 2;
    default: return 1;
  }
}

}  // namespace ortgpu
