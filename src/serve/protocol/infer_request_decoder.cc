#include "serve/protocol/infer_request_decoder.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <simdjson.h>

namespace ortgpu::serve::protocol {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

std::string_view Describe(element_type t) {
  switch (t) {
    case element_type::ARRAY: return "an array";
    case element_type::OBJECT: return "an object";
    case element_type::INT64:
    case element_type::UINT64: return "an integer";
    case element_type::DOUBLE: return "a floating-point number";
    case element_type::STRING: return "a string";
    case element_type::BOOL: return "a boolean";
    case element_type::NULL_VALUE: return "null";
  }
  return "an unknown value";
}

// Bodies up to this size get a byte position in their "not valid JSON"
// error; larger ones only simdjson's reason, so a malformed 57 MiB body is
// never scanned twice.
constexpr size_t kLocateErrorBytes = size_t{1} << 20;

// JSON parts up to this size leave the thread's parser buffers allocated
// for the next request; larger ones release them (see DecodeInferRequest).
constexpr size_t kRetainedParserBytes = size_t{4} << 20;

// A SAX handler that builds nothing and keeps the first error: finding
// where the JSON breaks costs no memory beyond the nesting depth (the DOM
// nlohmann would build took 30x the body).
struct ErrorLocator {
  size_t byte = 0;
  std::string what;
  bool null() { return true; }
  bool boolean(bool) { return true; }
  bool number_integer(nlohmann::json::number_integer_t) { return true; }
  bool number_unsigned(nlohmann::json::number_unsigned_t) { return true; }
  bool number_float(nlohmann::json::number_float_t, const std::string&) { return true; }
  bool string(std::string&) { return true; }
  bool binary(nlohmann::json::binary_t&) { return true; }
  bool start_object(std::size_t) { return true; }
  bool key(std::string&) { return true; }
  bool end_object() { return true; }
  bool start_array(std::size_t) { return true; }
  bool end_array() { return true; }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::json::exception& e) {
    byte = position;
    what = e.what();
    return false;
  }
};

// simdjson says only *that* the JSON is malformed; on that path a small
// body is scanned again (no DOM) for the byte position and a readable reason.
Status MalformedJson(std::string_view json, simdjson::error_code error) {
  if (error == simdjson::UTF8_ERROR) {
    return InvalidArgument(
        "request body is not valid JSON: it holds bytes that are not UTF-8, and JSON strings are UTF-8 text; "
        "send BYTES elements holding other bytes in the binary data extension (parameters.binary_data_size), "
        "or escape them as UTF-8 text");
  }
  if (json.size() <= kLocateErrorBytes) {
    ErrorLocator locator;
    if (!nlohmann::json::sax_parse(json.begin(), json.end(), &locator) && !locator.what.empty()) {
      return InvalidArgument(fmt::format(
          "request body is not valid JSON (at byte {}): {}; send a JSON object as described by the "
          "KServe v2 protocol (bare NaN/Infinity are not JSON: send them as the strings \"NaN\", "
          "\"Infinity\", \"-Infinity\")",
          locator.byte, locator.what));
    }
  }
  return InvalidArgument(fmt::format("request body is not valid JSON: {}", simdjson::error_message(error)));
}

// Reads a Parameters object: each value kept as its minified JSON text.
Status ReadParameters(element e, std::string_view where, Parameters& out) {
  simdjson::dom::object obj;
  if (e.get_object().get(obj)) {
    return InvalidArgument(fmt::format("{} 'parameters' must be an object, got {}", where, Describe(e.type())));
  }
  for (auto field : obj) {
    out[std::string(field.key)] = simdjson::minify(field.value);
  }
  return Status::Ok();
}

// Fetches an optional boolean parameter; InvalidArgument if not a boolean.
Expected<bool> BoolParameter(element params, std::string_view key, std::string_view where) {
  element v;
  if (params.at_key(key).get(v)) return false;
  bool b = false;
  if (v.get_bool().get(b)) {
    return InvalidArgument(fmt::format("{} parameter '{}' must be true or false, got {}", where, key,
                                       Describe(v.type())));
  }
  return b;
}

// Appends one JSON leaf to a tensor of the given type. `index` is the flat
// element index, for messages.
class LeafWriter {
 public:
  LeafWriter(Tensor& t, std::string_view input) : t_(t), input_(input) {}

  Status Append(element e, int64_t index) {
    switch (t_.dtype) {
      case DataType::kBool: return AppendBool(e, index);
      case DataType::kUint8: return AppendInt<uint8_t>(e, index);
      case DataType::kUint16: return AppendInt<uint16_t>(e, index);
      case DataType::kUint32: return AppendInt<uint32_t>(e, index);
      case DataType::kUint64: return AppendInt<uint64_t>(e, index);
      case DataType::kInt8: return AppendInt<int8_t>(e, index);
      case DataType::kInt16: return AppendInt<int16_t>(e, index);
      case DataType::kInt32: return AppendInt<int32_t>(e, index);
      case DataType::kInt64: return AppendInt<int64_t>(e, index);
      case DataType::kFloat16:
      case DataType::kBfloat16:
      case DataType::kFloat:
      case DataType::kDouble: return AppendFloat(e, index);
      case DataType::kString: return AppendString(e, index);
      default: break;
    }
    return Unimplemented(fmt::format("input '{}': datatype {} cannot be sent as JSON", input_,
                                     KServeName(t_.dtype)));
  }

 private:
  Status WrongType(element e, int64_t index, std::string_view expected) const {
    return InvalidArgument(fmt::format("input '{}': element {} is {}, but datatype {} needs {}", input_,
                                       index, Describe(e.type()), KServeName(t_.dtype), expected));
  }

  template <typename T>
  void Push(T v) {
    size_t at = t_.data.size();
    t_.data.resize(at + sizeof(T));
    std::memcpy(t_.data.data() + at, &v, sizeof(T));
  }

  Status AppendBool(element e, int64_t index) {
    bool b = false;
    if (e.get_bool().get(b)) return WrongType(e, index, "true or false");
    Push<uint8_t>(b ? 1 : 0);
    return Status::Ok();
  }

  template <typename T>
  Status AppendInt(element e, int64_t index) {
    using Limits = std::numeric_limits<T>;
    if (e.type() == element_type::INT64) {
      int64_t v = e.get_int64().value_unsafe();
      bool fits = std::is_signed_v<T> ? (v >= static_cast<int64_t>(Limits::min()) &&
                                         v <= static_cast<int64_t>(Limits::max()))
                                      : (v >= 0 && static_cast<uint64_t>(v) <= static_cast<uint64_t>(Limits::max()));
      if (!fits) return OutOfRange(fmt::format("{}", v), index, Limits::min(), Limits::max());
      Push<T>(static_cast<T>(v));
      return Status::Ok();
    }
    if (e.type() == element_type::UINT64) {  // only values above INT64_MAX land here
      uint64_t v = e.get_uint64().value_unsafe();
      if (v > static_cast<uint64_t>(Limits::max())) {
        return OutOfRange(fmt::format("{}", v), index, Limits::min(), Limits::max());
      }
      Push<T>(static_cast<T>(v));
      return Status::Ok();
    }
    return WrongType(e, index, "an integer");
  }

  template <typename T>
  Status OutOfRange(const std::string& seen, int64_t index, T lo, T hi) const {
    return InvalidArgument(fmt::format("input '{}': element {} is {}, out of range for {} [{}, {}]", input_,
                                       index, seen, KServeName(t_.dtype), +lo, +hi));
  }

  Status AppendFloat(element e, int64_t index) {
    double d = 0;
    switch (e.type()) {
      case element_type::INT64: d = static_cast<double>(e.get_int64().value_unsafe()); break;
      case element_type::UINT64: d = static_cast<double>(e.get_uint64().value_unsafe()); break;
      case element_type::DOUBLE: d = e.get_double().value_unsafe(); break;
      case element_type::STRING: {
        std::string_view s = e.get_string().value_unsafe();
        if (s == "NaN") {
          d = std::numeric_limits<double>::quiet_NaN();
        } else if (s == "Infinity") {
          d = std::numeric_limits<double>::infinity();
        } else if (s == "-Infinity") {
          d = -std::numeric_limits<double>::infinity();
        } else {
          return WrongType(e, index, "a number (or \"NaN\", \"Infinity\", \"-Infinity\")");
        }
        break;
      }
      default: return WrongType(e, index, "a number");
    }
    if (std::isfinite(d) && t_.dtype != DataType::kDouble) {
      // Rounding to the nearest representable value would give Infinity.
      // Halfway between FLT_MAX and the next power of two: from here on a
      // double rounds to Infinity as a float (and the cast would be UB).
      static const double kFloatOverflow = std::ldexp(2.0 - std::ldexp(1.0, -24), 127);
      bool overflows = std::fabs(d) >= kFloatOverflow;
      if (!overflows && t_.dtype == DataType::kFloat16) {
        overflows = std::isinf(HalfToFloat(FloatToHalf(static_cast<float>(d))));
      } else if (!overflows && t_.dtype == DataType::kBfloat16) {
        overflows = std::isinf(Bfloat16ToFloat(FloatToBfloat16(static_cast<float>(d))));
      }
      if (overflows) {
        return InvalidArgument(fmt::format("input '{}': element {} is {}, too large for {}", input_, index, d,
                                           KServeName(t_.dtype)));
      }
    }
    switch (t_.dtype) {
      case DataType::kFloat16: Push<uint16_t>(FloatToHalf(static_cast<float>(d))); break;
      case DataType::kBfloat16: Push<uint16_t>(FloatToBfloat16(static_cast<float>(d))); break;
      case DataType::kFloat: Push<float>(static_cast<float>(d)); break;
      default: Push<double>(d); break;
    }
    return Status::Ok();
  }

  Status AppendString(element e, int64_t index) {
    std::string_view s;
    if (e.get_string().get(s)) return WrongType(e, index, "a string");
    t_.strings.emplace_back(s);
    return Status::Ok();
  }

  Tensor& t_;
  std::string_view input_;
};

// Visits the leaves of a data array in row-major order. KServe allows the
// flat form ([1,2,3,4]) and the nested form following the shape
// ([[1,2],[3,4]] for [2,2]); in the nested form every array at depth d must
// hold exactly shape[d] items and leaves sit at depth rank, so ragged data
// ([[1,2,3],[4]] for [1,4]) is refused even when its leaf count fits.
// Depth is bounded by simdjson's max depth (1024), so recursion is safe.
struct DataLayout {
  const std::vector<int64_t>& shape;
  bool nested = false;
  std::string_view input;
};

Status Flatten(element e, size_t depth, const DataLayout& layout, LeafWriter& writer, int64_t& count, int64_t limit) {
  const size_t leaf_depth = layout.nested ? layout.shape.size() : 1;
  if (e.type() == element_type::ARRAY) {
    simdjson::dom::array arr;
    if (e.get_array().get(arr)) return Internal("array expected");
    if (depth >= leaf_depth || (layout.nested && static_cast<int64_t>(arr.size()) != layout.shape[depth])) {
      return InvalidArgument(fmt::format(
          "input '{}': 'data' is ragged or nested differently from its shape [{}] (an array at depth {} holds {} "
          "items); send it flat, or nested exactly as the shape",
          layout.input, ShapeToString(layout.shape), depth, arr.size()));
    }
    for (element child : arr) {
      ORTGPU_RETURN_IF_ERROR(Flatten(child, depth + 1, layout, writer, count, limit));
    }
    return Status::Ok();
  }
  if (depth != leaf_depth) {
    return InvalidArgument(fmt::format(
        "input '{}': 'data' mixes values and arrays at depth {}; send it flat, or nested exactly as the shape [{}]",
        layout.input, depth, ShapeToString(layout.shape)));
  }
  if (count >= limit) {
    return InvalidArgument(fmt::format("input '{}': 'data' has more than the {} elements its shape calls for",
                                       layout.input, limit));
  }
  ORTGPU_RETURN_IF_ERROR(writer.Append(e, count));
  ++count;
  return Status::Ok();
}

uint32_t ReadLe32(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return static_cast<uint32_t>(u[0]) | static_cast<uint32_t>(u[1]) << 8 | static_cast<uint32_t>(u[2]) << 16 |
         static_cast<uint32_t>(u[3]) << 24;
}

// Reads `count` length-prefixed BYTES elements that fill `bytes` exactly.
Status ReadBinaryStrings(std::string_view bytes, int64_t count, Tensor& t) {
  size_t pos = 0;
  for (int64_t i = 0; i < count; ++i) {
    if (bytes.size() - pos < 4) {
      return InvalidArgument(fmt::format(
          "input '{}': binary BYTES data ends inside the length prefix of element {} (offset {} of {} bytes); "
          "each element is a 4-byte little-endian length followed by its bytes",
          t.name, i, pos, bytes.size()));
    }
    uint32_t len = ReadLe32(bytes.data() + pos);
    pos += 4;
    if (bytes.size() - pos < len) {
      return InvalidArgument(fmt::format(
          "input '{}': binary BYTES element {} claims {} bytes but only {} remain in its binary_data_size",
          t.name, i, len, bytes.size() - pos));
    }
    t.strings.emplace_back(bytes.substr(pos, len));
    pos += len;
  }
  if (pos != bytes.size()) {
    return InvalidArgument(fmt::format(
        "input '{}': binary_data_size is {} but its {} BYTES elements use {} bytes", t.name, bytes.size(), count,
        pos));
  }
  return Status::Ok();
}

struct BinarySection {
  std::string_view bytes;
  size_t used = 0;
  // Keeps `bytes` alive; when set, binary tensors borrow their bytes from
  // the body instead of copying them (TensorBytes::Borrow).
  std::shared_ptr<const void> owner;
};

// An input in shared memory gets no data here; its parameters go to `shm`.
Expected<Tensor> DecodeInput(element in, size_t position, BinarySection& binary, size_t json_size, Parameters& shm) {
  std::string where = fmt::format("input {}", position);
  if (in.type() != element_type::OBJECT) {
    return InvalidArgument(fmt::format("{} must be an object, got {}", where, Describe(in.type())));
  }
  Tensor t;
  std::string_view name;
  element v;
  if (in.at_key("name").get(v) || v.get_string().get(name)) {
    return InvalidArgument(fmt::format("{} needs a string 'name'", where));
  }
  t.name = std::string(name);
  where = fmt::format("input '{}'", t.name);

  std::string_view datatype;
  if (in.at_key("datatype").get(v) || v.get_string().get(datatype)) {
    return InvalidArgument(fmt::format("{} needs a string 'datatype' (FP32, INT64, BYTES, ...)", where));
  }
  auto dtype = DataTypeFromKServe(datatype);
  if (!dtype) {
    return InvalidArgument(fmt::format(
        "{} has unknown datatype '{}'; use one of BOOL, UINT8, UINT16, UINT32, UINT64, INT8, INT16, INT32, "
        "INT64, FP16, BF16, FP32, FP64, BYTES",
        where, datatype));
  }
  t.dtype = *dtype;

  simdjson::dom::array shape;
  if (in.at_key("shape").get(v) || v.get_array().get(shape)) {
    return InvalidArgument(fmt::format("{} needs 'shape', an array of non-negative integers", where));
  }
  for (element d : shape) {
    int64_t dim = 0;
    if (d.get_int64().get(dim)) {
      return InvalidArgument(fmt::format("{}: shape entries must be integers, got {}", where, Describe(d.type())));
    }
    if (dim < 0) {
      return InvalidArgument(fmt::format("{}: shape has negative dimension {}; requests need concrete shapes",
                                         where, dim));
    }
    t.shape.push_back(dim);
  }
  auto count = ElementCount(t.shape);
  if (!count) {
    return InvalidArgument(fmt::format("{}: shape [{}] has too many elements", where, ShapeToString(t.shape)));
  }
  size_t elem_size = ElementSize(t.dtype);
  if (t.dtype != DataType::kString &&
      static_cast<uint64_t>(*count) > std::numeric_limits<uint64_t>::max() / elem_size) {
    return InvalidArgument(fmt::format("{}: shape [{}] is too large", where, ShapeToString(t.shape)));
  }

  element params;
  bool has_params = !in.at_key("parameters").get(params);
  int64_t binary_size = -1;
  if (has_params) {
    if (params.type() != element_type::OBJECT) {
      return InvalidArgument(fmt::format("{}: 'parameters' must be an object", where));
    }
    if (!params.at_key("shared_memory_region").error()) {
      if (!in.at_key("data").error() || !params.at_key("binary_data_size").error()) {
        return InvalidArgument(fmt::format("{} names a shared memory region and also sends data; send one", where));
      }
      ORTGPU_RETURN_IF_ERROR(ReadParameters(params, where, shm));
      return t;  // the front end reads the region
    }
    if (!params.at_key("binary_data_size").get(v)) {
      if (v.get_int64().get(binary_size) || binary_size < 0) {
        return InvalidArgument(fmt::format("{}: binary_data_size must be a non-negative integer", where));
      }
    }
  }

  element data;
  bool has_data = !in.at_key("data").get(data);
  if (binary_size >= 0) {
    if (has_data) {
      return InvalidArgument(fmt::format("{} has both 'data' and binary_data_size; send one of them", where));
    }
    size_t left = binary.bytes.size() - binary.used;
    if (static_cast<uint64_t>(binary_size) > left) {
      return InvalidArgument(fmt::format(
          "{}: binary_data_size is {} but only {} bytes of binary data remain after the {}-byte JSON part "
          "(check Inference-Header-Content-Length and the body length)",
          where, binary_size, left, json_size));
    }
    std::string_view bytes = binary.bytes.substr(binary.used, static_cast<size_t>(binary_size));
    binary.used += static_cast<size_t>(binary_size);
    if (t.dtype == DataType::kString) {
      ORTGPU_RETURN_IF_ERROR(ReadBinaryStrings(bytes, *count, t));
    } else {
      uint64_t expected = static_cast<uint64_t>(*count) * elem_size;
      if (expected != bytes.size()) {
        return InvalidArgument(fmt::format(
            "{}: binary_data_size is {} bytes but shape [{}] of {} needs {} bytes", where, bytes.size(),
            ShapeToString(t.shape), datatype, expected));
      }
      if (binary.owner) {
        t.data.Borrow(binary.owner, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      } else {
        t.data.assign(bytes.begin(), bytes.end());
      }
    }
    return t;
  }
  if (!has_data) {
    return InvalidArgument(fmt::format("{} has no 'data' and no parameters.binary_data_size", where));
  }
  if (data.type() != element_type::ARRAY) {
    return InvalidArgument(fmt::format("{}: 'data' must be an array, got {}", where, Describe(data.type())));
  }
  // Every JSON leaf takes at least two bytes ("0,"), so the JSON size bounds
  // what we reserve whatever the shape claims.
  size_t reserve = std::min<uint64_t>(static_cast<uint64_t>(*count), json_size / 2 + 1);
  if (t.dtype == DataType::kString) {
    t.strings.reserve(reserve);
  } else {
    t.data.reserve(reserve * elem_size);
  }
  LeafWriter writer(t, t.name);
  int64_t seen = 0;
  simdjson::dom::array top;
  if (data.get_array().get(top)) return Internal("array expected");
  DataLayout layout{t.shape, false, t.name};
  for (element first : top) {
    layout.nested = first.type() == element_type::ARRAY;
    break;
  }
  ORTGPU_RETURN_IF_ERROR(Flatten(data, 0, layout, writer, seen, *count));
  if (seen != *count) {
    return InvalidArgument(fmt::format("{}: 'data' has {} elements but shape [{}] needs {}", where, seen,
                                       ShapeToString(t.shape), *count));
  }
  return t;
}

Status DecodeOutputs(element outputs, InferRequest& request) {
  simdjson::dom::array arr;
  if (outputs.get_array().get(arr)) {
    return InvalidArgument(fmt::format("'outputs' must be an array, got {}", Describe(outputs.type())));
  }
  std::set<std::string, std::less<>> names;
  size_t position = 0;
  for (element out : arr) {
    std::string_view name;
    element v;
    if (out.type() != element_type::OBJECT || out.at_key("name").get(v) || v.get_string().get(name)) {
      return InvalidArgument(fmt::format("output {} needs a string 'name'", position));
    }
    RequestedOutput r;
    r.name = std::string(name);
    std::string where = fmt::format("output '{}'", r.name);
    if (!names.insert(r.name).second) {
      return InvalidArgument(fmt::format("{} is requested twice", where));
    }
    element params;
    if (!out.at_key("parameters").get(params)) {
      if (params.type() != element_type::OBJECT) {
        return InvalidArgument(fmt::format("{}: 'parameters' must be an object", where));
      }
      ORTGPU_ASSIGN_OR_RETURN(r.binary_data, BoolParameter(params, "binary_data", where));
      ORTGPU_RETURN_IF_ERROR(ReadParameters(params, where, r.parameters));
    }
    request.outputs.push_back(std::move(r));
    ++position;
  }
  return Status::Ok();
}

}  // namespace

Expected<size_t> ParseInferenceHeaderLength(std::string_view value) {
  size_t n = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
  if (value.empty() || ec != std::errc() || end != value.data() + value.size()) {
    return InvalidArgument(fmt::format("{} is '{}', not a byte count; it must be the decimal length of the "
                                       "JSON part of the body",
                                       kInferenceHeaderContentLength, value));
  }
  return n;
}

Expected<InferRequest> DecodeInferRequest(std::string_view body, std::optional<size_t> json_length,
                                          std::string model, std::string version,
                                          std::shared_ptr<const void> body_owner) {
  size_t json_size = body.size();
  if (json_length) {
    if (*json_length > body.size()) {
      return InvalidArgument(fmt::format("{} is {} but the body has only {} bytes", kInferenceHeaderContentLength,
                                         *json_length, body.size()));
    }
    json_size = *json_length;
  }
  std::string_view json = body.substr(0, json_size);
  BinarySection binary{body.substr(json_size), 0, std::move(body_owner)};

  // One parser per thread: its buffers are reused, which is most of
  // simdjson's speed on repeated requests. They grow with the JSON (about
  // 8-16 bytes per value), so after a JSON part above kRetainedParserBytes
  // they are given back instead of staying with the thread for good.
  thread_local simdjson::dom::parser parser;
  struct ReleaseLargeBuffers {
    size_t json_size;
    ~ReleaseLargeBuffers() {
      if (json_size > kRetainedParserBytes) parser = simdjson::dom::parser();
    }
  } release{json.size()};
  element doc;
  if (auto error = parser.parse(json.data(), json.size()).get(doc)) {
    return MalformedJson(json, error);
  }
  if (doc.type() != element_type::OBJECT) {
    return InvalidArgument(fmt::format("request body must be a JSON object, got {}", Describe(doc.type())));
  }

  InferRequest request;
  request.model_name = std::move(model);
  request.model_version = std::move(version);
  element v;
  if (!doc.at_key("id").get(v)) {
    std::string_view id;
    if (v.get_string().get(id)) {
      return InvalidArgument(fmt::format("'id' must be a string, got {}", Describe(v.type())));
    }
    request.id = std::string(id);
  }
  if (!doc.at_key("parameters").get(v)) {
    ORTGPU_RETURN_IF_ERROR(ReadParameters(v, "request", request.parameters));
    ORTGPU_ASSIGN_OR_RETURN(request.binary_data_output, BoolParameter(v, "binary_data_output", "request"));
  }
  simdjson::dom::array inputs;
  if (doc.at_key("inputs").get(v) || v.get_array().get(inputs)) {
    return InvalidArgument("request needs 'inputs', an array of tensors");
  }
  std::set<std::string, std::less<>> names;
  size_t position = 0;
  for (element in : inputs) {
    Parameters shm;
    ORTGPU_ASSIGN_OR_RETURN(Tensor t, DecodeInput(in, position, binary, json_size, shm));
    if (!shm.empty()) request.shared_memory_inputs[t.name] = std::move(shm);
    if (!names.insert(t.name).second) {
      return InvalidArgument(fmt::format("input '{}' appears twice", t.name));
    }
    request.inputs.push_back(std::move(t));
    ++position;
  }
  if (binary.used != binary.bytes.size()) {
    return InvalidArgument(fmt::format(
        "body has {} bytes of binary data after the {}-byte JSON part but the inputs' binary_data_size "
        "add up to {}; check Inference-Header-Content-Length and each binary_data_size",
        binary.bytes.size(), json_size, binary.used));
  }
  if (!doc.at_key("outputs").get(v)) {
    ORTGPU_RETURN_IF_ERROR(DecodeOutputs(v, request));
  }
  return request;
}

}  // namespace ortgpu::serve::protocol
