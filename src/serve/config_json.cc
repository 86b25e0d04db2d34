#include "serve/config_json.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/util/json_util.h>

namespace ortgpu::serve {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;

bool Is64Bit(const FieldDescriptor& f) {
  return f.cpp_type() == FieldDescriptor::CPPTYPE_INT64 || f.cpp_type() == FieldDescriptor::CPPTYPE_UINT64;
}

void FixNumber(nlohmann::json& v, const FieldDescriptor& f) {
  if (!v.is_string()) return;
  const std::string& s = v.get_ref<const std::string&>();
  try {
    if (f.cpp_type() == FieldDescriptor::CPPTYPE_INT64) {
      v = static_cast<int64_t>(std::stoll(s));
    } else {
      v = static_cast<uint64_t>(std::stoull(s));
    }
  } catch (const std::exception&) {
    // Not a number: leave the printer's text.
  }
}

void FixMessage(nlohmann::json& j, const Descriptor& d);

// One field's JSON value (`v`), whatever its shape: scalar, repeated, map or message.
void FixField(nlohmann::json& v, const FieldDescriptor& f) {
  if (f.is_map()) {
    const FieldDescriptor* value = f.message_type()->map_value();
    if (!v.is_object()) return;
    for (auto& [key, item] : v.items()) FixField(item, *value);
    return;
  }
  if (f.is_repeated() && v.is_array()) {
    for (auto& item : v) {
      if (Is64Bit(f)) FixNumber(item, f);
      if (f.cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) FixMessage(item, *f.message_type());
    }
    return;
  }
  if (Is64Bit(f)) FixNumber(v, f);
  if (f.cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) FixMessage(v, *f.message_type());
}

void FixMessage(nlohmann::json& j, const Descriptor& d) {
  if (!j.is_object()) return;
  for (int i = 0; i < d.field_count(); ++i) {
    const FieldDescriptor& f = *d.field(i);
    auto it = j.find(f.name());
    if (it != j.end()) FixField(*it, f);
  }
}

}  // namespace

nlohmann::json TritonConfigJson(const google::protobuf::Message& config) {
  std::string text;
  google::protobuf::util::JsonPrintOptions opts;
  opts.preserve_proto_field_names = true;
  opts.always_print_primitive_fields = true;
  if (!google::protobuf::util::MessageToJsonString(config, &text, opts).ok()) return nlohmann::json::object();
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return nlohmann::json::object();
  FixMessage(j, *config.GetDescriptor());
  return j;
}

}  // namespace ortgpu::serve
