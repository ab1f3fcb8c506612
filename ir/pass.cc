#include "ir/pass.h"

#include "ir/printer.h"
#include "ir/verifier.h"

namespace amptrain::ir {

StatusOr<bool> PassManager::Run(Graph& graph) {
  bool changed = false;
  for (auto& pass : passes_) {
    StatusOr<bool> r = pass->Run(graph);
    if (!r.ok()) return r.status().WithContext(StrCat("pass ", pass->name()));
    changed |= *r;
    if (verify_) {
      Status v = Verify(graph);
      if (!v.ok()) return v.WithContext(StrCat("graph invalid after pass ", pass->name()));
    }
    if (dump_os_ && (dump_pass_ == "*" || dump_pass_ == pass->name()))
      *dump_os_ << "// after " << pass->name() << (*r ? " (changed)" : " (unchanged)") << "\n" << PrintGraph(graph);
  }
  return changed;
}

}  // namespace amptrain::ir
