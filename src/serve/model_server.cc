#include "serve/model_server.h"

namespace ortgpu::serve {

std::string_view ModelStateName(ModelState s) {
  switch (s) {
    case ModelState::kLoading: return "LOADING";
    case ModelState::kReady: return "READY";
    case ModelState::kUnavailable: return "UNAVAILABLE";
    case ModelState::kUnloading: return "UNLOADING";
  }
  return "UNAVAILABLE";
}

}  // namespace ortgpu::serve
