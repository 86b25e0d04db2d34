// Serves the ONNX backend node tests (scripts/make_conformance_repo.py over
// Debian's libonnx-testdata) through the server core and compares every
// output with the expected one. The tests that fail must be exactly those
// of conformance_expected.h, each listed with its reason (docs/SERVING.md
// explains them). tests/e2e/conformance_http_test.cc runs the same cases
// through HTTP.
#include <gtest/gtest.h>

#include <iostream>
#include <map>
#include <sstream>

#include "serve/core/conformance_cases.h"
#include "serve/core/conformance_expected.h"
#include "serve/core/test_repository.h"
#include "serve/server_core.h"

namespace ortgpu::serve {
namespace {

TEST(ConformanceTest, OnnxNodeTestsServedThroughTheCoreMatchTheirExpectedOutputs) {
  std::string why_not;
  auto repo = testing::ConformanceRepository::Generate("conformance", why_not);
  if (!repo) GTEST_SKIP() << why_not;
  ServerOptions o;
  o.repository = repo->repository();
  o.loader.default_instance_kind = InstanceKind::kCpu;
  auto core = ServerCore::Create(o);
  ASSERT_TRUE(core.ok()) << core.status().ToString();

  int total = 0;
  std::map<std::string, std::string> failed;  // name -> why
  for (const auto& status : (*core)->RepositoryIndex(false)) {
    ++total;
    if (status.state != ModelState::kReady) {
      failed[status.name] = "not loaded: " + status.reason.substr(0, 240);
      continue;
    }
    auto c = repo->LoadCase(status.name);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    auto r = testing::InferSync(**core, testing::Request(status.name, c->inputs));
    if (!r.ok()) {
      failed[status.name] = "request failed: " + r.status().message().substr(0, 240);
      continue;
    }
    const std::string why = testing::CompareOutputs(r->outputs, c->outputs);
    if (!why.empty()) failed[status.name] = "wrong result: " + why;
  }
  std::ostringstream failures;
  for (const auto& [name, why] : failed) failures << name << ": " << why << "\n";
  std::cout << "conformance: " << total - static_cast<int>(failed.size()) << " of " << total
            << " node tests pass; the others:\n" << failures.str();
  // Exactly the expected failures: one more is a regression in the core, one fewer leaves the list.
  EXPECT_EQ(testing::CompareWithExpectedFailures(failed, "core"), "");
}

}  // namespace
}  // namespace ortgpu::serve
