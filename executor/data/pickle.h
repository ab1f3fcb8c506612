// A reader of Python pickles that executes nothing: enough of protocols 2-5
// for the data files that PyTorch users have on disk (torchvision's CIFAR-10
// and CIFAR-100 "python version" batches: a dict of numpy arrays and lists).
//
// The pickle's stack machine is replayed into plain values: None, bools,
// ints, floats, byte strings, text, tuples, lists, dicts, globals (a
// "module.name" reference, never imported) and objects (a global called
// with arguments, REDUCE / NEWOBJ, with BUILD's state kept as data). Two
// calls are understood because the files need them: `_codecs.encode(text,
// 'latin1')` (how Python 3 pickles bytes at protocol 2) gives the bytes, and
// NumpyArray below reads numpy's `_reconstruct` objects. Every length is
// checked against the bytes left, the stack and memo are bounded, and an
// opcode outside the subset is an error naming it and its offset.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ir/status.h"
#include "ir/tensor.h"

namespace amptrain::executor::data {

struct PickleValue {
  enum class Kind { kNone, kBool, kInt, kFloat, kBytes, kText, kTuple, kList, kDict, kGlobal, kObject };
  Kind kind = Kind::kNone;
  int64_t int_value = 0;  // kBool, kInt
  double float_value = 0;
  std::string text;       // kBytes, kText; kGlobal: "module.name"
  // kTuple, kList: the items; kDict: key, value, key, value, ...; kObject:
  // the callable, the argument tuple and BUILD's state (kNone without one).
  // The values belong to the Pickle (lists may hold themselves).
  std::vector<PickleValue*> items;

  // A dict's value for a key given as bytes or text (Python 2 pickles read
  // with encoding='bytes' have byte-string keys); nullptr when absent.
  const PickleValue* Find(std::string_view key) const;
  static const char* KindName(Kind k);
};

// A parsed pickle: the values it made, owned flat (no recursion frees them).
class Pickle {
 public:
  const PickleValue& root() const { return *root_; }
  PickleValue* New(PickleValue::Kind kind);

 private:
  friend StatusOr<std::unique_ptr<Pickle>> ParsePickle(std::string_view bytes, const std::string& what);
  std::vector<std::unique_ptr<PickleValue>> values_;
  const PickleValue* root_ = nullptr;
};

// Parses one pickle (the bytes up to its STOP). `what` names the source in
// errors ("'data_batch_1'").
StatusOr<std::unique_ptr<Pickle>> ParsePickle(std::string_view bytes, const std::string& what);

// A numpy array as pickled by numpy (`_reconstruct` with ndarray, then BUILD
// with (version, shape, dtype, fortran order, raw bytes)) of unsigned bytes
// ('u1'), C order: uint8 [shape...]. Other dtypes are Unimplemented.
StatusOr<ir::Tensor> NumpyUInt8Array(const PickleValue& v, const std::string& what);

// A list (or tuple) of ints, as int64 [n].
StatusOr<ir::Tensor> IntList(const PickleValue& v, const std::string& what);

}  // namespace amptrain::executor::data
