#include "ir/infer/infer_util.h"

namespace amptrain::ir {

StatusOr<Shape> BroadcastShapes(const Shape& a, const Shape& b) {
  size_t r = std::max(a.rank(), b.rank());
  std::vector<Dim> out(r);
  for (size_t i = 0; i < r; ++i) {
    const Dim* da = i < r - a.rank() ? nullptr : &a[i - (r - a.rank())];
    const Dim* db = i < r - b.rank() ? nullptr : &b[i - (r - b.rank())];
    if (!da) { out[i] = *db; continue; }
    if (!db) { out[i] = *da; continue; }
    if (da->is_static() && da->value == 1) out[i] = *db;
    else if (db->is_static() && db->value == 1) out[i] = *da;
    else if (*da == *db) out[i] = *da;
    else if (da->is_static() && db->is_static())
      return InvalidArgument("shapes ", a.ToString(), " and ", b.ToString(), " do not broadcast");
    else out[i] = da->is_static() ? *da : *db;  // a symbol must equal the static size
  }
  return Shape(std::move(out));
}

StatusOr<int64_t> NormalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) return OutOfRange("axis ", axis, " is out of range for rank ", rank);
  return axis < 0 ? axis + rank : axis;
}

Status RequireShape(const InferContext& ctx, size_t i) {
  if (i >= ctx.inputs.size() || !ctx.inputs[i].has_shape) return ctx.Error("input ", i, " has no known shape");
  return Status::Ok();
}

}  // namespace amptrain::ir
