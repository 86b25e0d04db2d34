// Serves the ONNX backend node tests (scripts/make_conformance_repo.py over
// Debian's libonnx-testdata) through the server core and compares every
// output with the expected one. Prints the models that cannot pass and why;
// docs/SERVING.md keeps that list. tests/e2e/conformance_http_test.cc runs
// the same cases through HTTP.
#include <gtest/gtest.h>

#include <iostream>
#include <sstream>

#include "serve/core/conformance_cases.h"
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

  int passed = 0, total = 0;
  std::ostringstream failures;
  for (const auto& status : (*core)->RepositoryIndex(false)) {
    ++total;
    if (status.state != ModelState::kReady) {
      failures << status.name << ": not loaded: " << status.reason.substr(0, 240) << "\n";
      continue;
    }
    auto c = repo->LoadCase(status.name);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    auto r = testing::InferSync(**core, testing::Request(status.name, c->inputs));
    if (!r.ok()) {
      failures << status.name << ": request failed: " << r.status().message().substr(0, 240) << "\n";
      continue;
    }
    const std::string why = testing::CompareOutputs(r->outputs, c->outputs);
    if (why.empty()) ++passed;
    else failures << status.name << ": wrong result: " << why << "\n";
  }
  std::cout << "conformance: " << passed << " of " << total << " node tests pass; the others:\n" << failures.str();
  // The list is documented in docs/SERVING.md; a drop means a regression in the core.
  EXPECT_GE(passed * 100, total * 90) << failures.str();
}

}  // namespace
}  // namespace ortgpu::serve
