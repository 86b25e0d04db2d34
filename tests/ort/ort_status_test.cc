#include "ort/ort_status.h"

#include <gtest/gtest.h>
#include <onnxruntime_cxx_api.h>

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

// Issue 11, seen on the H200: a batch past the CUDA EP's gpu_mem_limit
// failed with the arena's words, and was answered 400 as if the inputs were
// wrong. Out of memory is ResourceExhausted (503), with what to change.
TEST(OrtStatusTest, AnArenaAtItsLimitIsOutOfMemoryNotARejectedInput) {
  const std::string arena =
      "Non-zero status code returned while running Conv node. Name:'/conv1/Conv' Status Message: Available memory "
      "of 783910400 is smaller than requested bytes of 822083584";
  EXPECT_TRUE(IsOutOfMemoryMessage(arena));
  EXPECT_TRUE(IsOutOfMemoryMessage("CUDA failure 2: out of memory ; GPU=0"));
  EXPECT_TRUE(IsOutOfMemoryMessage("CUDNN failure 4: CUDNN_STATUS_ALLOC_FAILED"));
  EXPECT_FALSE(IsOutOfMemoryMessage(kPadFailure));
  const Status st = StatusFromOrt(Ort::Exception(std::string(arena), ORT_RUNTIME_EXCEPTION), "running model m");
  EXPECT_EQ(st.code(), Code::kResourceExhausted);
  EXPECT_EQ(st.message().find(std::string(kRunTimeRejection)), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("gpu_mem_limit"), std::string::npos) << st.message();
  // A node that rejects its inputs stays InvalidArgument.
  EXPECT_EQ(StatusFromOrt(Ort::Exception(std::string(kPadFailure), ORT_RUNTIME_EXCEPTION), "running model m").code(),
            Code::kInvalidArgument);
}

// Issue 25: serve decided by searching the words of ORT's messages. Those
// words are read once, here, into a Reason every caller decides by.
TEST(OrtStatusTest, Issue25ARunTimeRejectionHasItsReason) {
  const Status st = StatusFromOrt(Ort::Exception(std::string(kPadFailure), ORT_RUNTIME_EXCEPTION), "running model m");
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_EQ(st.reason(), Reason::kInputsRejectedWhileRunning);
  EXPECT_NE(st.message().find(std::string(kRunTimeRejection)), std::string::npos) << st.message();
  // Neither a CUDA library's failure inside a node nor memory running out is the inputs' fault.
  for (const char* explanation :
       {"CUDNN failure 5003: CUDNN_STATUS_EXECUTION_FAILED", "Available memory of 1 is smaller than requested bytes of 2"}) {
    const std::string failure =
        "Non-zero status code returned while running Conv node. Name:'c' Status Message: " + std::string(explanation);
    EXPECT_EQ(StatusFromOrt(Ort::Exception(std::string(failure), ORT_RUNTIME_EXCEPTION), "running model m").reason(),
              Reason::kNone)
        << explanation;
  }
}

TEST(OrtStatusTest, Issue25OrtsRefusalToCaptureACudaGraphHasItsReason) {
  for (const char* refusal :
       {"This session cannot use the graph capture feature as requested by the user as all compute graph nodes "
        "have not been partitioned to the CUDAExecutionProvider",
        "This session cannot use the graph capture feature as requested by the user as the model has control flow "
        "nodes which can't be supported by CUDAExecutionProvider",
        "This session cannot use the CUDA Graph feature as requested by the user as all the graph nodes have not "
        "been partitioned to the CUDA EP."}) {
    EXPECT_TRUE(IsCudaGraphRefusalMessage(refusal)) << refusal;
    const Status st = StatusFromOrt(Ort::Exception(std::string(refusal), ORT_FAIL), "loading model m");
    EXPECT_EQ(st.reason(), Reason::kCudaGraphRefused) << refusal;
    EXPECT_EQ(st.code(), Code::kInternal);
  }
  // A failure that merely mentions capture is not ORT's refusal.
  EXPECT_FALSE(IsCudaGraphRefusalMessage("CUDA failure 900: operation not permitted when stream is capturing"));
  EXPECT_EQ(StatusFromOrt(Ort::Exception("graph capture failed: CUDA failure 900", ORT_FAIL), "running m").reason(),
            Reason::kNone);
}

}  // namespace
}  // namespace ortgpu
