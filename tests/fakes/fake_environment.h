// FakeEnvironment: a map of environment variables for tests (PATH,
// LD_LIBRARY_PATH, VIRTUAL_ENV, HOME ...). Fill it before use; Get() is then
// safe from several threads.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "sys/environment.h"

namespace ortgpu::testing {

class FakeEnvironment final : public Environment {
 public:
  FakeEnvironment() = default;
  FakeEnvironment(std::initializer_list<std::pair<const std::string, std::string>> vars) : vars_(vars) {}

  void Set(const std::string& name, std::string value) { vars_[name] = std::move(value); }
  void Unset(const std::string& name) { vars_.erase(name); }

  std::optional<std::string> Get(const std::string& name) const override {
    auto it = vars_.find(name);
    if (it == vars_.end()) return std::nullopt;
    return it->second;
  }

 private:
  std::map<std::string, std::string> vars_;
};

}  // namespace ortgpu::testing
