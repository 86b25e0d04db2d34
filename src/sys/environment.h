// Environment: the process environment variables, behind an interface so
// doctor's findings about CUDA_VISIBLE_DEVICES, LD_LIBRARY_PATH, containers and
// virtualenvs can be tested with FakeEnvironment (tests/fakes/).
// Implementations are read-only and safe to call from any thread.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace ortgpu {

class Environment {
 public:
  virtual ~Environment() = default;
  virtual std::optional<std::string> Get(const std::string& name) const = 0;
};

// The real process environment (getenv). Never null.
const Environment& RealEnvironment();

// Splits a PATH-like value on ':' and drops empty parts.
std::vector<std::string> SplitPathList(const std::string& value);

}  // namespace ortgpu
