// Ops of opsets 7-10 that later opsets renamed or re-signed, rewritten on the
// proto before validation (detail::UpgradeLegacyOps), so that the rest of the
// importer sees their opset-11 form:
//   Upsample (7-9, deprecated at 10): attribute `scales` (7, 8) or input
//     scales (9, 10), mode nearest|linear
//       -> Resize(X, "", scales) with coordinate_transformation_mode
//          "asymmetric" and, for nearest, nearest_mode "floor": the output
//          index i reads input floor(i / scale), as Upsample defines it
//   Resize at opset 10: Resize(X, scales), the same semantics as Upsample
//       -> the same Resize-11 form
//   Scatter (9, 10; deprecated at 11): the same op as ScatterElements
//       -> ScatterElements
//   ImageScaler (experimental, until 9): y = scale * x + bias[c] on NCHW
//       -> Mul(x, scale) and Add(., bias as [1, C, 1, 1])
//   Slice before 10 (attributes starts, ends, axes), TopK before 10
//   (attribute k), Pad before 11 (attribute pads)
//       -> the same op with those as int64 inputs
// Clip's min and max and Pad's value become inputs of the data's dtype on
// the IR, once it is known (UpgradeToCanonical, importer/opset_adapters.cc).
#include <optional>
#include <string>
#include <vector>

#include "importer/import_internal.h"
#include "ir/status.h"

namespace amptrain::importer::detail {

namespace {

void SetString(onnx::NodeProto& n, const std::string& name, const std::string& value) {
  onnx::AttributeProto* a = FindAttr(n, name);
  if (!a) {
    a = n.add_attribute();
    a->set_name(name);
  }
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(value);
}

void EraseAttr(onnx::NodeProto& n, const std::string& name) {
  auto* attrs = n.mutable_attribute();
  for (int i = 0; i < attrs->size(); ++i)
    if (attrs->Get(i).name() == name) {
      attrs->DeleteSubrange(i, 1);
      return;
    }
}

class LegacyOps {
 public:
  LegacyOps(onnx::GraphProto& main, int64_t opset) : main_(main), opset_(opset) {}

  Status Run(onnx::GraphProto& g) {
    for (int i = 0; i < g.node_size(); ++i) {
      onnx::NodeProto& n = *g.mutable_node(i);
      for (auto& a : *n.mutable_attribute()) {
        if (a.has_g()) AMP_RETURN_IF_ERROR(Run(*a.mutable_g()));
        for (auto& sub : *a.mutable_graphs()) AMP_RETURN_IF_ERROR(Run(sub));
      }
      if (!IsDefaultDomain(n.domain())) continue;
      const std::string label = StrCat(n.op_type(), " ", NodeLabel(n, i));
      if (n.op_type() == "Upsample" && opset_ <= 10) {
        AMP_RETURN_IF_ERROR(Upsample(n, label));
      } else if (n.op_type() == "Resize" && opset_ == 10) {
        AMP_RETURN_IF_ERROR(ToResize11(n, label));
      } else if (n.op_type() == "Scatter") {
        n.set_op_type("ScatterElements");
      } else if (n.op_type() == "ImageScaler" && opset_ <= 9) {
        AMP_RETURN_IF_ERROR(ImageScaler(g, i, label));
      } else if (n.op_type() == "Slice" && opset_ < 10) {
        AMP_RETURN_IF_ERROR(IntsToInputs(n, label, {"starts", "ends", "axes"}));
      } else if (n.op_type() == "TopK" && opset_ < 10) {
        AMP_RETURN_IF_ERROR(IntsToInputs(n, label, {"k"}));
      } else if (n.op_type() == "Pad" && opset_ < 11) {
        AMP_RETURN_IF_ERROR(IntsToInputs(n, label, {"pads"}));
      }
    }
    return Status::Ok();
  }

 private:
  // Integer attributes that became inputs 1, 2, ... in this order (an int
  // becomes an int64 [1]); the first one is required, a later one that is
  // missing ends the list.
  Status IntsToInputs(onnx::NodeProto& n, const std::string& label, const std::vector<std::string>& attrs) {
    if (n.input_size() != 1)
      return InvalidArgument(label, " has ", n.input_size(), " inputs, expected 1 at opset ", opset_, " (",
                             attrs[0], " is an attribute there)");
    for (const std::string& name : attrs) {
      const onnx::AttributeProto* a = FindAttr(n, name);
      if (!a) {
        if (&name == &attrs[0]) return InvalidArgument(label, " has no '", name, "' attribute");
        break;
      }
      std::vector<int64_t> values(a->ints().begin(), a->ints().end());
      const bool scalar = a->type() == onnx::AttributeProto::INT;
      if (scalar) values = {a->i()};
      n.add_input(Edit().Ints(StrCat(n.name().empty() ? n.op_type() : n.name(), "_", name), values));
      EraseAttr(n, name);
    }
    return Status::Ok();
  }

  std::string Floats(const std::string& stem, const std::vector<int64_t>& dims, const std::vector<float>& values) {
    onnx::TensorProto* t = main_.add_initializer();
    t->set_name(Edit().Fresh(stem));
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    for (float v : values) t->add_float_data(v);
    return t->name();
  }

  // Node `index` of `g`, an ImageScaler, becomes the Mul by its scale; the
  // Add of the per-channel bias goes at the end of the node list (validation
  // orders the nodes).
  Status ImageScaler(onnx::GraphProto& g, int index, const std::string& label) {
    onnx::NodeProto& n = *g.mutable_node(index);
    if (n.input_size() != 1 || n.output_size() != 1)
      return InvalidArgument(label, " has ", n.input_size(), " inputs and ", n.output_size(),
                             " outputs, expected 1 and 1");
    const std::string stem = n.name().empty() ? std::string("image_scaler") : n.name();
    float scale = 1.0f;
    if (const onnx::AttributeProto* a = FindAttr(n, "scale")) scale = a->f();
    std::vector<float> bias;
    if (const onnx::AttributeProto* a = FindAttr(n, "bias")) bias.assign(a->floats().begin(), a->floats().end());
    const std::string y = n.output(0);
    n.set_op_type("Mul");
    n.clear_attribute();
    n.add_input(Floats(stem + "_scale", {}, {scale}));
    if (bias.empty()) return Status::Ok();
    const std::string scaled = Edit().Fresh(stem + "_scaled");
    n.set_output(0, scaled);
    onnx::NodeProto* add = g.add_node();  // invalidates n
    add->set_op_type("Add");
    add->set_name(Edit().Fresh(stem + "_bias"));
    add->add_input(scaled);
    add->add_input(Floats(stem + "_bias", {1, static_cast<int64_t>(bias.size()), 1, 1}, bias));
    add->add_output(y);
    return Status::Ok();
  }

  // Upsample-7/8 keeps its scales in an attribute, Upsample-9/10 in input 1.
  Status Upsample(onnx::NodeProto& n, const std::string& label) {
    if (opset_ <= 8) {
      const onnx::AttributeProto* scales = FindAttr(n, "scales");
      if (!scales || scales->floats_size() == 0) return InvalidArgument(label, " has no 'scales' attribute");
      if (n.input_size() != 1)
        return InvalidArgument(label, " has ", n.input_size(), " inputs, expected 1 at opset ", opset_);
      n.add_input(Floats(StrCat(n.name().empty() ? std::string("upsample") : n.name(), "_scales"),
                         {scales->floats_size()}, {scales->floats().begin(), scales->floats().end()}));
      EraseAttr(n, "scales");
    }
    n.set_op_type("Resize");
    return ToResize11(n, label);
  }

  // Resize(X, scales) with Upsample's semantics -> Resize(X, "", scales).
  static Status ToResize11(onnx::NodeProto& n, const std::string& label) {
    if (n.input_size() != 2 || n.input(1).empty())
      return InvalidArgument(label, " has ", n.input_size(), " inputs, expected X and scales");
    std::string mode = "nearest";
    if (const onnx::AttributeProto* a = FindAttr(n, "mode")) mode = a->s();
    if (mode != "nearest" && mode != "linear")
      return InvalidArgument(label, ": mode '", mode, "' is neither 'nearest' nor 'linear'");
    const std::string scales = n.input(1);
    n.set_input(1, "");
    n.add_input(scales);
    SetString(n, "mode", mode);
    SetString(n, "coordinate_transformation_mode", "asymmetric");
    if (mode == "nearest") SetString(n, "nearest_mode", "floor");
    return Status::Ok();
  }

  // Made on the first rewrite: collecting the names costs a pass over the
  // model, which most imports (nothing to rewrite) need not pay.
  ProtoEditor& Edit() {
    if (!edit_) edit_.emplace(main_);
    return *edit_;
  }

  std::optional<ProtoEditor> edit_;
  onnx::GraphProto& main_;
  int64_t opset_;
};

}  // namespace

bool IsLegacyOpName(const std::string& op_type) {
  return op_type == "Upsample" || op_type == "Scatter" || op_type == "ImageScaler";
}

Status UpgradeLegacyOps(onnx::ModelProto& model) {
  if (!model.has_graph()) return Status::Ok();
  int64_t opset = 0;
  for (const auto& o : model.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
  if (opset == 0) return Status::Ok();  // ReadModelInfo names the missing opset
  onnx::GraphProto& g = *model.mutable_graph();
  return LegacyOps(g, opset).Run(g);
}

}  // namespace amptrain::importer::detail
