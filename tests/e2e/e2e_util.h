// Helpers of the end-to-end suites: shell commands, oracle availability,
// errors, files; and RunOnceLocked for fixtures shared by several cases
// (ctest runs every case of a binary in its own process, in parallel: a
// fixture such as exported PyTorch models must be made once, under a lock).
#pragma once

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "ir/graph.h"
#include "ir/tensor.h"
#include "tests/common/python_env.h"

namespace amptrain::testing {

inline int Sh(const std::string& cmd) { return std::system(cmd.c_str()); }
// The venv (tests/common/python_env.h) with torch: the PyTorch exporter and oracle.
inline bool HaveTorch() { return PyHas("torch, torchvision"); }
// The venv with onnx and onnxruntime: the checker and ONNX Runtime.
inline bool HaveOrt() { return PyHas("onnxruntime, onnx"); }

// The node of `g` named `name`, null when none is.
inline const ir::Node* NodeNamed(const ir::Graph& g, const std::string& name) {
  for (const ir::Node* n : g.nodes())
    if (n->name() == name) return n;
  return nullptr;
}

inline std::string ReadFile(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// ||a - b|| / ||b|| over all elements (b the reference).
inline double RelL2(const ir::Tensor& a, const ir::Tensor& b) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < b.num_elements(); ++i) {
    double d = a.GetAsDouble(i) - b.GetAsDouble(i);
    num += d * d;
    den += b.GetAsDouble(i) * b.GetAsDouble(i);
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

// ||a - b|| / max(||b||, floor): the gradient error of TESTING.md (b the
// reference); the floor keeps true-zero gradients (a conv bias before a
// training-mode BN) from dividing rounding noise by ~0.
inline double FlooredRelL2(const ir::Tensor& a, const ir::Tensor& b, double floor = 1e-2) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < b.num_elements(); ++i) {
    double d = a.GetAsDouble(i) - b.GetAsDouble(i);
    num += d * d;
    den += b.GetAsDouble(i) * b.GetAsDouble(i);
  }
  return std::sqrt(num) / std::max(std::sqrt(den), floor);
}

// Runs the shell `command` (which fills `dir`) unless a previous run of the
// same command succeeded, holding an exclusive lock on <dir>.lock meanwhile.
// True when `dir` holds the command's successful output.
inline bool RunOnceLocked(const std::string& dir, const std::string& command) {
  std::filesystem::create_directories(std::filesystem::path(dir).parent_path());
  int fd = ::open((dir + ".lock").c_str(), O_CREAT | O_RDWR, 0644);
  if (fd < 0) return false;
  ::flock(fd, LOCK_EX);
  const std::string stamp_path = dir + ".stamp";
  std::stringstream stamp;
  stamp << std::ifstream(stamp_path).rdbuf();
  bool ok = stamp.str() == command;
  if (!ok) {
    std::filesystem::remove(stamp_path);
    std::filesystem::create_directories(dir);
    ok = std::system(command.c_str()) == 0;
    if (ok) std::ofstream(stamp_path) << command;
  }
  ::flock(fd, LOCK_UN);
  ::close(fd);
  return ok;
}

}  // namespace amptrain::testing
