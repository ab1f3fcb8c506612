// The interpreter of the Python oracles (PyTorch, ONNX Runtime, the onnx
// checker, numpy, safetensors): the project venv that scripts/setup.sh makes
// at <repo>/.venv, with PyPI's onnx, onnxruntime, onnxconverter-common and
// safetensors, and Debian's torch, torchvision and numpy seen through
// --system-site-packages. AMPTRAIN_PYTHON=/path/to/python overrides it.
//
// Tests that need an oracle skip, naming the missing module, when the venv
// lacks it: `if (!PyHas("torch")) GTEST_SKIP() << PySkip("torch");`.
#pragma once

#include <cstdlib>
#include <string>

namespace amptrain::testing {

// The interpreter's path.
inline const std::string& PythonPath() {
  static const std::string path = [] {
    if (const char* p = std::getenv("AMPTRAIN_PYTHON"); p != nullptr && *p != '\0') return std::string(p);
    return std::string(AMPTRAIN_SOURCE_DIR "/.venv/bin/python");
  }();
  return path;
}

// The interpreter as the start of a shell command: "env -u ... <path> ". The
// oracles run with every instruction set: a oneDNN cap set for amptrain
// (ONEDNN_MAX_CPU_ISA=AVX2) made PyTorch's own bf16 convolutions fail ("could
// not create a primitive descriptor iterator"), which is no finding about ours.
inline std::string Py() { return "env -u ONEDNN_MAX_CPU_ISA -u DNNL_MAX_CPU_ISA '" + PythonPath() + "' "; }

// True when the interpreter imports every module of `modules` ("torch, torchvision").
inline bool PyHas(const std::string& modules) {
  return std::system((Py() + "-c 'import " + modules + "' >/dev/null 2>&1").c_str()) == 0;
}

// The skip message for a missing oracle.
inline std::string PySkip(const std::string& modules) {
  return PythonPath() + " cannot import " + modules + " (scripts/setup.sh makes the venv)";
}

}  // namespace amptrain::testing
