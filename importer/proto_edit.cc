// Fresh names and small initializers for the rewrites of the proto before
// validation (importer/import_internal.h: ProtoEditor).
#include <string>
#include <vector>

#include "importer/import_internal.h"
#include "ir/status.h"

namespace amptrain::importer::detail {

ProtoEditor::ProtoEditor(onnx::GraphProto& g) : g_(g) { Collect(g); }

void ProtoEditor::Collect(const onnx::GraphProto& g) {
  for (const auto& v : g.input()) names_.insert(v.name());
  for (const auto& t : g.initializer()) names_.insert(t.name());
  for (const auto& n : g.node()) {
    names_.insert(n.name());
    for (const auto& o : n.output()) names_.insert(o);
    for (const auto& a : n.attribute()) {
      if (a.has_g()) Collect(a.g());
      for (const auto& sub : a.graphs()) Collect(sub);
    }
  }
}

std::string ProtoEditor::Fresh(const std::string& stem) {
  std::string name = stem;
  for (int k = 1; names_.count(name); ++k) name = StrCat(stem, "_", k);
  names_.insert(name);
  return name;
}

std::string ProtoEditor::Ints(const std::string& stem, const std::vector<int64_t>& values, bool scalar) {
  onnx::TensorProto* t = g_.add_initializer();
  t->set_name(Fresh(stem));
  t->set_data_type(onnx::TensorProto::INT64);
  if (!scalar) t->add_dims(static_cast<int64_t>(values.size()));
  for (int64_t v : values) t->add_int64_data(v);
  return t->name();
}

std::string ProtoEditor::True(const std::string& stem) {
  onnx::TensorProto* t = g_.add_initializer();
  t->set_name(Fresh(stem));
  t->set_data_type(onnx::TensorProto::BOOL);
  t->add_int32_data(1);
  return t->name();
}

}  // namespace amptrain::importer::detail
