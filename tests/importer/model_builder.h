// Helpers that build small ONNX ModelProtos in C++ for the importer tests.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstring>
#include <string>
#include <vector>

namespace amptrain::importer::testing {

inline onnx::ModelProto NewModel(int64_t opset = 17, int64_t ir_version = 8) {
  onnx::ModelProto m;
  m.set_ir_version(ir_version);
  m.set_producer_name("importer-test");
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  m.mutable_graph()->set_name("test_graph");
  return m;
}

// dims: >= 0 static, -1 symbolic "N".
inline void SetType(onnx::ValueInfoProto* vi, int32_t elem, const std::vector<int64_t>& dims) {
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem);
  auto* shape = tt->mutable_shape();
  for (int64_t d : dims) {
    auto* dim = shape->add_dim();
    if (d >= 0) dim->set_dim_value(d);
    else dim->set_dim_param("N");
  }
}

inline onnx::ValueInfoProto* AddInput(onnx::ModelProto& m, const std::string& name, const std::vector<int64_t>& dims,
                                      int32_t elem = onnx::TensorProto::FLOAT) {
  auto* vi = m.mutable_graph()->add_input();
  vi->set_name(name);
  SetType(vi, elem, dims);
  return vi;
}

inline onnx::ValueInfoProto* AddOutput(onnx::ModelProto& m, const std::string& name) {
  auto* vi = m.mutable_graph()->add_output();
  vi->set_name(name);
  return vi;
}

inline void FillFloats(onnx::TensorProto* t, const std::string& name, const std::vector<int64_t>& dims,
                       const std::vector<float>& values) {
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->add_dims(d);
  t->set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
}

// A float initializer with values 0, 0.5, 1, ... in raw_data.
inline onnx::TensorProto* AddInitializer(onnx::ModelProto& m, const std::string& name, const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i) v[i] = 0.5f * static_cast<float>(i);
  auto* t = m.mutable_graph()->add_initializer();
  FillFloats(t, name, dims, v);
  return t;
}

inline onnx::NodeProto* AddNode(onnx::ModelProto& m, const std::string& op, const std::vector<std::string>& inputs,
                                const std::vector<std::string>& outputs, const std::string& name = "") {
  auto* n = m.mutable_graph()->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (const auto& i : inputs) n->add_input(i);
  for (const auto& o : outputs) n->add_output(o);
  return n;
}

inline void SetInts(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

inline void SetInt(onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

inline void SetString(onnx::NodeProto* n, const std::string& name, const std::string& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}

inline void SetFloat(onnx::NodeProto* n, const std::string& name, float v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}

inline std::string Bytes(const onnx::ModelProto& m) { return m.SerializeAsString(); }

// x[N,1,8,8] -> Conv(w[4,1,3,3], b[4], pads 1) -> Relu -> Flatten -> Gemm(fc_w[10,256], fc_b[10], transB) -> y
inline onnx::ModelProto ConvReluGemm(int64_t opset = 17) {
  onnx::ModelProto m = NewModel(opset);
  AddInput(m, "x", {-1, 1, 8, 8});
  AddInitializer(m, "conv.w", {4, 1, 3, 3});
  AddInitializer(m, "conv.b", {4});
  AddInitializer(m, "fc.w", {10, 256});
  AddInitializer(m, "fc.b", {10});
  auto* conv = AddNode(m, "Conv", {"x", "conv.w", "conv.b"}, {"c"}, "conv1");
  SetInts(conv, "pads", {1, 1, 1, 1});
  SetInts(conv, "kernel_shape", {3, 3});
  AddNode(m, "Relu", {"c"}, {"r"}, "relu1");
  SetInt(AddNode(m, "Flatten", {"r"}, {"f"}, "flatten"), "axis", 1);
  auto* gemm = AddNode(m, "Gemm", {"f", "fc.w", "fc.b"}, {"y"}, "fc");
  SetInt(gemm, "transB", 1);
  SetFloat(gemm, "alpha", 1.0f);
  AddOutput(m, "y");
  return m;
}

}  // namespace amptrain::importer::testing
