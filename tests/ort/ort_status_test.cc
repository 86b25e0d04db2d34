#include "ort/ort_status.h"

#include <gtest/gtest.h>

namespace ortgpu {
namespace {

constexpr const char* kPadFailure =
    "Non-zero status code returned while running Pad node. Name:'reflect_pad' Status Message: "
    "/onnxruntime_src/onnxruntime/core/providers/cpu/tensor/pad.cc:351 onnxruntime::common::Status "
    "onnxruntime::PadCpuImpl(onnxruntime::OpKernelContext*, const PadsVector&, const Mode&) "
    "extents[axis] >= 2 was false. Pad reflect needs at least 2 elements on the padded axis";

TEST(OrtStatusTest, SourceLocationsAndSignaturesAreRemovedAndTheExplanationKept) {
  EXPECT_EQ(WithoutSourceLocations(kPadFailure),
            "Non-zero status code returned while running Pad node. Name:'reflect_pad' Status Message: "
            "extents[axis] >= 2 was false. Pad reflect needs at least 2 elements on the padded axis");
  EXPECT_EQ(WithoutSourceLocations("/src/a/element_wise_ops.h:560 void onnxruntime::BroadcastIterator::Append("
                                   "ptrdiff_t, ptrdiff_t) [with T = float] axis == 1 || axis == largest was false. "
                                   "Attempting to broadcast an axis by a dimension other than 1. 24 by 25"),
            "axis == 1 || axis == largest was false. Attempting to broadcast an axis by a dimension other than 1. "
            "24 by 25");
  // Without a signature only the location goes.
  EXPECT_EQ(WithoutSourceLocations("at /x/y/z.cc:12 bad value"), "at bad value");
  // Text that only looks a little like a location is left alone.
  for (const char* text : {"ratio 1:2", "see docs/SERVING.md:3", "time 12:30 and file.cc: x"}) {
    EXPECT_EQ(WithoutSourceLocations(text), text);
  }
}

TEST(OrtStatusTest, TheFailingNodeIsNamedFromOrtsMessage) {
  EXPECT_EQ(FailingNode(kPadFailure), "node 'reflect_pad' (Pad)");
  EXPECT_EQ(FailingNode("running model m: Non-zero status code returned while running If node. Name:'branch'"),
            "node 'branch' (If)");
  EXPECT_EQ(FailingNode("input 'x' has type int64 but the model expects float32"), "");
  // In a subgraph the innermost node is the one that failed.
  const std::string nested =
      "Non-zero status code returned while running If node. Name:'branch' Status Message: Non-zero status code "
      "returned while running Reshape node. Name:'frames' Status Message: cannot reshape {64,64} to {64,-1,80}\n";
  EXPECT_EQ(FailingNode(nested), "node 'frames' (Reshape)");
  EXPECT_EQ(FailureExplanation(nested), "cannot reshape {64,64} to {64,-1,80}");
}

}  // namespace
}  // namespace ortgpu
