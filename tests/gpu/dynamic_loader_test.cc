#include "gpu/dynamic_loader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fakes/fake_dynamic_loader.h"

namespace ortgpu::gpu {
namespace {

using testing::FakeDynamicLoader;

int Answer() { return 42; }
double Half(double x) { return x / 2; }

TEST(DynamicLoaderTest, ResolveSymbolsStoresTypedPointersAndListsTheAbsentInOrder) {
  FakeDynamicLoader loader;
  loader.AddLibrary("libx.so.1", {"/lib/libx.so.1.2",
                                  {{"answer", FakeDynamicLoader::Fn2Ptr(Answer)},
                                   {"half", FakeDynamicLoader::Fn2Ptr(Half)}}});
  auto lib = OpenLibrary(loader, "libx.so.1", SymbolScope::kLocal);
  ASSERT_TRUE(lib.ok());
  EXPECT_EQ(lib->path, "/lib/libx.so.1.2");
  int (*answer)() = nullptr;
  double (*half)(double) = nullptr;
  int (*gone)() = Answer;  // overwritten with nullptr: absent
  int (*also_gone)() = nullptr;
  const auto missing = ResolveSymbols(loader, lib->handle,
                                      {FunctionSlot("zeta", gone), FunctionSlot("answer", answer),
                                       FunctionSlot("half", half), FunctionSlot("alpha", also_gone)});
  EXPECT_EQ(missing, (std::vector<std::string>{"zeta", "alpha"}));
  ASSERT_NE(answer, nullptr);
  ASSERT_NE(half, nullptr);
  EXPECT_EQ(answer(), 42);
  EXPECT_EQ(half(3.0), 1.5);
  EXPECT_EQ(gone, nullptr);
}

TEST(DynamicLoaderTest, OpenLibraryFallsBackToTheRequestedNameWhenThePathIsUnknown) {
  FakeDynamicLoader loader;
  loader.AddLibrary("libx.so.1", {"", {}});
  auto lib = OpenLibrary(loader, "libx.so.1", SymbolScope::kGlobal);
  ASSERT_TRUE(lib.ok());
  EXPECT_EQ(lib->path, "libx.so.1");
  ASSERT_EQ(loader.calls().size(), 1u);
  EXPECT_EQ(loader.calls()[0].scope, SymbolScope::kGlobal);
}

TEST(DynamicLoaderTest, OpenLibraryNamesTheLibraryAndKeepsTheLoadersText) {
  FakeDynamicLoader loader;
  auto lib = OpenLibrary(loader, "libnope.so.3", SymbolScope::kLocal);
  EXPECT_EQ(lib.status().code(), Code::kUnavailable);
  EXPECT_EQ(lib.status().message(),
            "cannot load libnope.so.3: libnope.so.3: cannot open shared object file: No such file or directory");
}

TEST(DynamicLoaderTest, MissingSymbolsErrorIsOkWhenNothingIsMissing) {
  EXPECT_TRUE(MissingSymbolsError("/lib/libx.so", "X", {}, "advice").ok());
  const Status st = MissingSymbolsError("/lib/libx.so", "X", {"a", "b"}, "upgrade X");
  EXPECT_EQ(st.code(), Code::kUnavailable);
  EXPECT_EQ(st.message(), "/lib/libx.so lacks the X entry points a, b; upgrade X");
}

TEST(DynamicLoaderTest, RealLoaderOpenFailureIsReportedWithDlerror) {
  auto lib = OpenLibrary(RealDynamicLoader(), "/nonexistent/libortgpu_absent.so", SymbolScope::kLocal);
  EXPECT_EQ(lib.status().code(), Code::kUnavailable);
  EXPECT_THAT(lib.status().message(),
              ::testing::HasSubstr("cannot load /nonexistent/libortgpu_absent.so: /nonexistent/libortgpu_absent.so"));
}

}  // namespace
}  // namespace ortgpu::gpu
