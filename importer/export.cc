// ir::Graph -> ONNX ModelProto.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <unordered_set>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "importer/import_internal.h"
#include "importer/onnx_export.h"
#include "importer/opset_adapters.h"
#include "importer/tensor_proto.h"
#include "ir/onnx_dtype.h"
#include "ir/output_path.h"
#include "ir/rnn.h"

namespace amptrain::importer {

namespace {

// The lowest IR version whose readers accept `opset` (onnx/helper.py's table).
int64_t MinIrVersion(int64_t opset) {
  if (opset >= 28) return 14;
  if (opset >= 25) return 13;
  if (opset >= 24) return 12;
  if (opset >= 23) return 11;
  if (opset >= 21) return 10;
  if (opset >= 19) return 9;
  if (opset >= 15) return 8;
  return 7;
}

void TypeToProto(const ir::TensorType& t, onnx::TypeProto* p) {
  auto* tt = p->mutable_tensor_type();
  tt->set_elem_type(ir::OnnxFromDType(t.dtype));
  if (!t.has_shape) return;
  auto* shape = tt->mutable_shape();
  for (const ir::Dim& d : t.shape.dims()) {
    auto* dim = shape->add_dim();
    if (d.is_static()) dim->set_dim_value(d.value);
    else if (!d.symbol.empty()) dim->set_dim_param(d.symbol);
  }
}

void ValueInfoToProto(const ir::ValueInfo& vi, onnx::ValueInfoProto* p) {
  p->set_name(vi.name);
  if (!vi.doc.empty()) p->set_doc_string(vi.doc);
  if (vi.type.dtype != ir::DType::kUndefined) TypeToProto(vi.type, p->mutable_type());
}

void AttrToProto(const std::string& name, const ir::AttrValue& value, onnx::AttributeProto* a) {
  using A = onnx::AttributeProto;
  a->set_name(name);
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, int64_t>) {
          a->set_type(A::INT), a->set_i(v);
        } else if constexpr (std::is_same_v<T, float>) {
          a->set_type(A::FLOAT), a->set_f(v);
        } else if constexpr (std::is_same_v<T, std::string>) {
          a->set_type(A::STRING), a->set_s(v);
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          a->set_type(A::INTS);
          for (int64_t x : v) a->add_ints(x);
        } else if constexpr (std::is_same_v<T, std::vector<float>>) {
          a->set_type(A::FLOATS);
          for (float x : v) a->add_floats(x);
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          a->set_type(A::STRINGS);
          for (const auto& x : v) a->add_strings(x);
        } else {
          a->set_type(A::TENSOR);
          TensorToProto(v, "", a->mutable_t());
        }
      },
      value);
}

void NodeToProto(const ir::Graph& g, const ir::Node& n, onnx::NodeProto* p) {
  p->set_name(n.name());
  p->set_op_type(std::string(n.schema().onnx_type));
  if (!n.doc().empty()) p->set_doc_string(n.doc());
  size_t nin = n.num_inputs();
  while (nin > 0 && !n.has_input(nin - 1)) --nin;
  for (size_t i = 0; i < nin; ++i) p->add_input(n.has_input(i) ? g.name(n.input(i)) : std::string());
  for (size_t i = 0; i < n.num_outputs(); ++i) p->add_output(n.output_info(i).name);
  for (const auto& [name, value] : n.attrs().all()) AttrToProto(name, value, p->add_attribute());  // std::map: name order
}

Status BuildModel(const ir::Graph& g, int64_t opset, onnx::ModelProto* m) {
  const ir::ModelInfo& info = g.info();
  m->set_ir_version(std::max(info.ir_version, MinIrVersion(opset)));
  auto* op = m->add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  for (const auto& [domain, version] : info.other_opsets) {
    auto* o = m->add_opset_import();
    o->set_domain(domain);
    o->set_version(version);
  }
  m->set_producer_name(info.producer_name);
  m->set_producer_version(info.producer_version);
  m->set_domain(info.domain);
  m->set_model_version(info.model_version);
  m->set_doc_string(info.doc);
  for (const auto& [k, v] : info.metadata) {
    auto* kv = m->add_metadata_props();
    kv->set_key(k);
    kv->set_value(v);
  }
  onnx::GraphProto* gp = m->mutable_graph();
  gp->set_name(info.graph_name);
  for (ir::Value v : g.initializers()) {
    const ir::Tensor* t = g.ConstantValue(v);
    if (!t) return Internal("initializer '", g.name(v), "' has no value");
    TensorToProto(*t, g.name(v), gp->add_initializer());
  }
  for (ir::Value v : g.inputs()) ValueInfoToProto(g.info(v), gp->add_input());
  AMP_ASSIGN_OR_RETURN(auto order, g.TopologicalOrder());
  // Node names are written unique (ONNX Runtime refuses a model with two
  // nodes of one name): a repeat, which a pass can make, gets a suffix.
  std::unordered_set<std::string> names;
  for (const ir::Node* n : order) {
    if (n->schema().onnx_type.empty())
      return Unimplemented(n->Describe(), ": an IR-only op (no ONNX op type) cannot be exported");
    if (ir::IsRecurrent(n->op()) && n->num_outputs() > ir::RecurrentOnnxOutputs(n->op()))
      return Unimplemented(n->Describe(), ": its training-graph reserve output (ir/rnn.h) has no ONNX form");
    onnx::NodeProto* p = gp->add_node();
    NodeToProto(g, *n, p);
    if (p->name().empty()) continue;
    std::string name = p->name();
    for (int k = 1; !names.insert(name).second; ++k) name = StrCat(p->name(), "_", k);
    p->set_name(name);
  }
  for (ir::Value v : g.outputs()) ValueInfoToProto(g.info(v), gp->add_output());
  for (const ir::Node* n : order)
    for (size_t i = 0; i < n->num_outputs(); ++i)
      if (n->output_info(i).type.dtype != ir::DType::kUndefined && !g.is_graph_output(n->output(i)))
        ValueInfoToProto(n->output_info(i), gp->add_value_info());
  return Status::Ok();
}

Status WriteAll(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t w = write(fd, bytes.data() + done, bytes.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return IoError("write failed: ", std::strerror(errno));
    done += static_cast<size_t>(w);
  }
  return Status::Ok();
}

Status SyncDir(const std::string& dir) {
  int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return IoError("cannot open folder '", dir, "': ", std::strerror(errno));
  int rc = fsync(fd);
  close(fd);
  if (rc != 0) return IoError("fsync of folder '", dir, "' failed: ", std::strerror(errno));
  return Status::Ok();
}

}  // namespace

Status CheckWritableOpset(int64_t opset) {
  if (opset < detail::kMinExportOpset || opset > detail::kMaxOpset)
    return Unimplemented("cannot write opset ", opset, " (supported: ", detail::kMinExportOpset, "..", detail::kMaxOpset,
                         ")");
  return Status::Ok();
}

StatusOr<std::string> ExportModelBytes(const ir::Graph& graph, const ExportOptions& opts) {
  const int64_t opset = opts.opset != 0 ? opts.opset : graph.info().opset;
  AMP_RETURN_IF_ERROR(CheckWritableOpset(opset));
  std::unique_ptr<ir::Graph> g = graph.Clone();
  AMP_RETURN_IF_ERROR(DowngradeFromCanonical(*g, opset));
  onnx::ModelProto model;
  AMP_RETURN_IF_ERROR(BuildModel(*g, opset, &model));
  if (model.ByteSizeLong() > static_cast<size_t>(INT_MAX)) return Unimplemented("model exceeds 2 GiB");
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    if (!model.SerializeToCodedStream(&coded)) return Internal("protobuf serialization failed");
  }
  return out;
}

Status ExportModelFile(const ir::Graph& graph, const std::string& path, const ExportOptions& opts) {
  AMP_RETURN_IF_ERROR(ir::CheckReplaceableOutput(path, "model"));
  AMP_ASSIGN_OR_RETURN(std::string bytes, ExportModelBytes(graph, opts));
  std::string tmp = path + ".tmp-XXXXXX";
  int fd = mkstemp(tmp.data());
  if (fd < 0) return IoError("cannot create '", tmp, "': ", std::strerror(errno));
  Status s = WriteAll(fd, bytes);
  if (s.ok() && fchmod(fd, 0644) != 0) s = IoError("chmod failed: ", std::strerror(errno));
  if (s.ok() && fsync(fd) != 0) s = IoError("fsync failed: ", std::strerror(errno));
  if (close(fd) != 0 && s.ok()) s = IoError("close failed: ", std::strerror(errno));
  if (s.ok() && rename(tmp.c_str(), path.c_str()) != 0) s = IoError("rename failed: ", std::strerror(errno));
  if (!s.ok()) {
    unlink(tmp.c_str());
    return s.WithContext(StrCat("writing '", path, "'"));
  }
  return SyncDir(detail::ParentDir(path)).WithContext(StrCat("writing '", path, "'"));
}

}  // namespace amptrain::importer
