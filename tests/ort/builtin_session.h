// The builtin check model (onnx::BuiltinCheckModel: image [batch, 3, 64,
// 64] -> logits) loaded on the CPU with one intra-op thread, for the ort/
// tests; null (and a test failure) when it does not load.
#pragma once

#include <memory>

#include <gtest/gtest.h>

#include "onnx/model_builder.h"
#include "ort/session.h"

namespace ortgpu::test {

inline std::unique_ptr<Session> BuiltinSession(SessionOptions o = {}) {
  o.intra_op_threads = 1;
  auto s = Session::LoadFromBytes(onnx::BuiltinCheckModel(), o, "builtin");
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(s).value() : nullptr;
}

}  // namespace ortgpu::test
