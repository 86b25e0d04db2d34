// The ONNX node-test conformance suite as tests use it: a repository generated
// by scripts/make_conformance_repo.py from Debian's libonnx-testdata into a
// temporary folder, each test's inputs and expected outputs read back as
// Tensors, and the comparison of served outputs with the expected ones.
// Shared by tests/serve/core/conformance_test.cc (through ServerCore::Infer)
// and tests/e2e/conformance_http_test.cc (through HTTP, JSON and binary).
//
// ConformanceRepository owns its temporary folder and removes it when
// destroyed. Read-only after Generate(): LoadCase may be called from several
// threads at once. The free functions are pure.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ort/tensor.h"
#include "status/expected.h"

namespace ortgpu::serve::testing {

// Absolute tolerance and relative tolerance of the comparison (ONNX's backend
// tests use these for most operators).
inline constexpr double kConformanceAtol = 1e-4;
inline constexpr double kConformanceRtol = 1e-3;

// A floating-point element: a JSON number, or a string for what JSON numbers
// cannot hold ("nan", "inf", "-inf" in the cases; "NaN", "Infinity",
// "-Infinity" in KServe responses: std::stod reads both spellings).
inline double ConformanceNumber(const nlohmann::json& v) {
  return v.is_string() ? std::stod(v.get<std::string>()) : v.get<double>();
}

// A tensor in the KServe JSON form {"name", "datatype", "shape", "data": flat}
// (the cases' files and KServe responses alike). InvalidArgument when the
// datatype is unknown or `data` does not have the shape's element count.
inline Expected<Tensor> TensorFromKServeJson(const nlohmann::json& j) {
  Tensor t;
  t.name = j.at("name").get<std::string>();
  auto dt = DataTypeFromKServe(j.at("datatype").get<std::string>());
  if (!dt) return InvalidArgument("unknown datatype " + j.at("datatype").dump());
  t.dtype = *dt;
  t.shape = j.at("shape").get<std::vector<int64_t>>();
  const auto& data = j.at("data");
  if (!data.is_array() || static_cast<int64_t>(data.size()) != t.element_count()) {
    return InvalidArgument("tensor '" + t.name + "': 'data' has " + std::to_string(data.size()) +
                           " elements, shape [" + ShapeToString(t.shape) + "] needs " +
                           std::to_string(t.element_count()));
  }
  if (t.dtype == DataType::kString) {
    for (const auto& s : data) t.strings.push_back(s.get<std::string>());
    return t;
  }
  t = Tensor::Zeros(t.name, t.dtype, t.shape);
  for (size_t i = 0; i < data.size(); ++i) {
    const auto& v = data[i];
    switch (t.dtype) {
      case DataType::kFloat: t.data_as<float>()[i] = static_cast<float>(ConformanceNumber(v)); break;
      case DataType::kDouble: t.data_as<double>()[i] = ConformanceNumber(v); break;
      case DataType::kFloat16: t.data_as<uint16_t>()[i] = FloatToHalf(static_cast<float>(ConformanceNumber(v))); break;
      case DataType::kBfloat16:
        t.data_as<uint16_t>()[i] = FloatToBfloat16(static_cast<float>(ConformanceNumber(v)));
        break;
      case DataType::kInt8: t.data_as<int8_t>()[i] = v.get<int8_t>(); break;
      case DataType::kInt16: t.data_as<int16_t>()[i] = v.get<int16_t>(); break;
      case DataType::kInt32: t.data_as<int32_t>()[i] = v.get<int32_t>(); break;
      case DataType::kInt64: t.data_as<int64_t>()[i] = v.get<int64_t>(); break;
      case DataType::kUint8: t.data_as<uint8_t>()[i] = v.get<uint8_t>(); break;
      case DataType::kUint16: t.data_as<uint16_t>()[i] = v.get<uint16_t>(); break;
      case DataType::kUint32: t.data_as<uint32_t>()[i] = v.get<uint32_t>(); break;
      case DataType::kUint64: t.data_as<uint64_t>()[i] = v.get<uint64_t>(); break;
      case DataType::kBool: t.data_as<uint8_t>()[i] = v.get<bool>() ? 1 : 0; break;
      default: return Unimplemented("datatype " + std::string(KServeName(t.dtype)) + " not handled by the test");
    }
  }
  return t;
}

// "" when `got` matches `want` within the tolerance (NaN matches NaN, an
// infinity matches the same infinity); else what differs first.
inline std::string CompareTensor(const Tensor& got, const Tensor& want) {
  if (got.dtype != want.dtype) {
    return "datatype " + std::string(KServeName(got.dtype)) + " instead of " + std::string(KServeName(want.dtype));
  }
  if (got.shape != want.shape) return "shape " + ShapeToString(got.shape) + " instead of " + ShapeToString(want.shape);
  if (want.dtype == DataType::kString) return got.strings == want.strings ? "" : "different strings";
  if (Status size = ValidateTensorSize(got); !size.ok()) return size.message();
  for (int64_t i = 0; i < want.element_count(); ++i) {
    const double g = ElementAsDouble(got, i), w = ElementAsDouble(want, i);
    if (std::isnan(w) && std::isnan(g)) continue;
    if (std::isinf(w) && g == w) continue;
    if (!(std::fabs(g - w) <= kConformanceAtol + kConformanceRtol * std::fabs(w))) {
      return "element " + std::to_string(i) + " is " + std::to_string(g) + ", expected " + std::to_string(w);
    }
  }
  return "";
}

// "" when every expected output is in `got` (found by name) and matches.
inline std::string CompareOutputs(const std::vector<Tensor>& got, const std::vector<Tensor>& want) {
  for (const Tensor& w : want) {
    const Tensor* g = nullptr;
    for (const Tensor& t : got) {
      if (t.name == w.name) g = &t;
    }
    std::string why = g == nullptr ? "missing" : CompareTensor(*g, w);
    if (!why.empty()) return "output '" + w.name + "': " + why;
  }
  return "";
}

struct ConformanceCase {
  std::vector<Tensor> inputs;   // the graph inputs the test gives, in graph order
  std::vector<Tensor> outputs;  // the expected outputs, in graph order
};

class ConformanceRepository {
 public:
  // Runs scripts/make_conformance_repo.py into a fresh temporary folder named
  // after `tag` and the process. Null (with `why` set) when the script fails,
  // i.e. python3-onnx or libonnx-testdata is missing: callers GTEST_SKIP.
  static std::unique_ptr<ConformanceRepository> Generate(const std::string& tag, std::string& why) {
    std::unique_ptr<ConformanceRepository> r(new ConformanceRepository(
        ::testing::TempDir() + "/ortgpu-" + tag + "-" + std::to_string(::getpid())));
    std::error_code ec;
    std::filesystem::remove_all(r->root_, ec);
    const std::string cmd =
        std::string(ORTGPU_SOURCE_DIR) + "/scripts/make_conformance_repo.py " + r->root_ + " > /dev/null";
    if (std::system(cmd.c_str()) != 0) {
      why = "python3-onnx or libonnx-testdata missing: " + cmd;
      return nullptr;
    }
    return r;
  }
  ~ConformanceRepository() {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  ConformanceRepository(const ConformanceRepository&) = delete;
  ConformanceRepository& operator=(const ConformanceRepository&) = delete;

  // The Triton-layout repository: one model per node test.
  std::string repository() const { return root_ + "/repository"; }

  // The inputs and expected outputs of node test `name` (OUT/cases/<name>.json).
  Expected<ConformanceCase> LoadCase(const std::string& name) const {
    std::ifstream in(root_ + "/cases/" + name + ".json");
    if (!in) return NotFound("no case file for " + name);
    auto j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return InvalidArgument("case file of " + name + " is not JSON");
    ConformanceCase c;
    for (const auto& t : j["inputs"]) {
      ORTGPU_ASSIGN_OR_RETURN(Tensor in_t, TensorFromKServeJson(t));
      c.inputs.push_back(std::move(in_t));
    }
    for (const auto& t : j["outputs"]) {
      ORTGPU_ASSIGN_OR_RETURN(Tensor out_t, TensorFromKServeJson(t));
      c.outputs.push_back(std::move(out_t));
    }
    return c;
  }

 private:
  explicit ConformanceRepository(std::string root) : root_(std::move(root)) {}
  std::string root_;
};

}  // namespace ortgpu::serve::testing
