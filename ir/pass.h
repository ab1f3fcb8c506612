// Passes and the pass manager.
//
// Every pass is `StatusOr<bool> Run(Graph&)`: true when it changed the graph.
// The manager runs passes in order, verifies the graph after each one when
// asked (always in tests), and can print the IR after a named pass.
#pragma once

#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace amptrain::ir {

class Pass {
 public:
  virtual ~Pass() = default;
  virtual std::string name() const = 0;
  virtual StatusOr<bool> Run(Graph& graph) = 0;
};

// Wraps a function as a pass.
class FunctionPass : public Pass {
 public:
  FunctionPass(std::string name, std::function<StatusOr<bool>(Graph&)> fn)
      : name_(std::move(name)), fn_(std::move(fn)) {}
  std::string name() const override { return name_; }
  StatusOr<bool> Run(Graph& graph) override { return fn_(graph); }

 private:
  std::string name_;
  std::function<StatusOr<bool>(Graph&)> fn_;
};

class PassManager {
 public:
  void Add(std::unique_ptr<Pass> pass) { passes_.push_back(std::move(pass)); }
  void set_verify(bool verify) { verify_ = verify; }
  // Prints the IR to `os` after the pass called `pass_name` ("*" for all).
  void DumpAfter(std::string pass_name, std::ostream* os) { dump_pass_ = std::move(pass_name); dump_os_ = os; }
  // Runs all passes once; true when any changed the graph.
  StatusOr<bool> Run(Graph& graph);

 private:
  std::vector<std::unique_ptr<Pass>> passes_;
  bool verify_ = false;
  std::string dump_pass_;
  std::ostream* dump_os_ = nullptr;
};

}  // namespace amptrain::ir
