#include "sys/environment.h"

#include <cstdlib>
#include <sstream>

namespace ortgpu {
namespace {

class ProcessEnvironment final : public Environment {
 public:
  std::optional<std::string> Get(const std::string& name) const override {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  }
};

}  // namespace

const Environment& RealEnvironment() {
  static const ProcessEnvironment env;
  return env;
}

std::vector<std::string> SplitPathList(const std::string& value) {
  std::vector<std::string> out;
  std::stringstream ss(value);
  std::string part;
  while (std::getline(ss, part, ':')) {
    if (!part.empty()) out.push_back(part);
  }
  return out;
}

}  // namespace ortgpu
