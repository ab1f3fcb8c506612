#include "executor/data/pickle.h"

#include <cstring>
#include <map>

#include "ir/shape.h"

namespace amptrain::executor::data {

using Kind = PickleValue::Kind;

namespace {

// Bounds on what one pickle may make: far above a CIFAR batch (a dict of 4
// entries, a list of 10,000 labels and 10,000 file names).
constexpr size_t kMaxValues = size_t{1} << 22;
constexpr size_t kMaxStack = size_t{1} << 22;

bool IsText(const PickleValue* v) { return v->kind == Kind::kBytes || v->kind == Kind::kText; }

// Text (UTF-8, as BINUNICODE holds it) whose every code point is below 256,
// as the bytes `text.encode('latin1')` gives; false otherwise.
bool Latin1(const std::string& utf8, std::string* out) {
  out->clear();
  for (size_t i = 0; i < utf8.size();) {
    const auto c = static_cast<unsigned char>(utf8[i]);
    if (c < 0x80) {
      out->push_back(static_cast<char>(c));
      ++i;
    } else if ((c & 0xE0) == 0xC0 && i + 1 < utf8.size() && c <= 0xC3) {
      out->push_back(static_cast<char>(((c & 0x1F) << 6) | (static_cast<unsigned char>(utf8[i + 1]) & 0x3F)));
      i += 2;
    } else {
      return false;
    }
  }
  return true;
}

class Parser {
 public:
  Parser(std::string_view bytes, const std::string& what, Pickle& out) : b_(bytes), what_(what), out_(out) {}

  StatusOr<const PickleValue*> Run() {
    while (true) {
      if (pos_ >= b_.size()) return Error("ends before its STOP opcode");
      op_at_ = pos_;
      const auto op = static_cast<unsigned char>(b_[pos_++]);
      if (op == '.') {
        if (stack_.size() != 1) return Error("stops with ", stack_.size(), " values on the stack, expected 1");
        return stack_.back();
      }
      AMP_RETURN_IF_ERROR(Step(op));
      if (stack_.size() > kMaxStack) return Error("holds more than ", kMaxStack, " values on its stack");
    }
  }

 private:
  template <class... A> Status Error(const A&... a) const {
    return InvalidArgument(what_, " is not a pickle amptrain reads: ", a..., " (at byte ", op_at_, ")");
  }

  StatusOr<std::string_view> Take(uint64_t n) {
    if (n > b_.size() - pos_) return Error("a length of ", n, " runs past the end of the file");
    std::string_view s = b_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  StatusOr<uint64_t> Uint(int bytes) {  // little-endian
    AMP_ASSIGN_OR_RETURN(std::string_view s, Take(bytes));
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(s[i]);
    return v;
  }
  StatusOr<std::string> Line() {
    const size_t end = b_.find('\n', pos_);
    if (end == std::string_view::npos) return Error("a GLOBAL name has no end of line");
    std::string s(b_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return s;
  }

  StatusOr<PickleValue*> New(Kind kind) {
    if (made_ >= kMaxValues) return Error("makes more than ", kMaxValues, " values");
    ++made_;
    return out_.New(kind);
  }
  Status Push(Kind kind, int64_t i = 0, std::string text = {}) {
    AMP_ASSIGN_OR_RETURN(PickleValue * v, New(kind));
    v->int_value = i;
    v->text = std::move(text);
    stack_.push_back(v);
    return Status::Ok();
  }
  StatusOr<PickleValue*> Pop() {
    if (stack_.size() <= Floor()) return Error("pops an empty stack");
    PickleValue* v = stack_.back();
    stack_.pop_back();
    return v;
  }
  size_t Floor() const { return marks_.empty() ? 0 : marks_.back(); }
  StatusOr<std::vector<PickleValue*>> PopMark() {
    if (marks_.empty()) return Error("has no MARK to pop to");
    std::vector<PickleValue*> items(stack_.begin() + static_cast<std::ptrdiff_t>(marks_.back()), stack_.end());
    stack_.resize(marks_.back());
    marks_.pop_back();
    return items;
  }
  StatusOr<PickleValue*> Top(Kind kind, const char* op) {
    if (stack_.size() <= Floor()) return Error(op, " on an empty stack");
    if (stack_.back()->kind != kind)
      return Error(op, " on a ", PickleValue::KindName(stack_.back()->kind), ", expected a ",
                   PickleValue::KindName(kind));
    return stack_.back();
  }
  Status Tuple(std::vector<PickleValue*> items) {
    AMP_ASSIGN_OR_RETURN(PickleValue * t, New(Kind::kTuple));
    t->items = std::move(items);
    stack_.push_back(t);
    return Status::Ok();
  }
  Status TupleOfTop(size_t n) {
    if (stack_.size() < Floor() + n) return Error("builds a tuple of ", n, " from fewer values");
    std::vector<PickleValue*> items(stack_.end() - static_cast<std::ptrdiff_t>(n), stack_.end());
    stack_.resize(stack_.size() - n);
    return Tuple(std::move(items));
  }
  Status Memo(uint64_t index) {
    if (stack_.size() <= Floor()) return Error("memoizes an empty stack");
    if (memo_.size() >= kMaxValues && !memo_.count(index)) return Error("memoizes more than ", kMaxValues, " values");
    memo_[index] = stack_.back();
    return Status::Ok();
  }
  Status Get(uint64_t index) {
    auto it = memo_.find(index);
    if (it == memo_.end()) return Error("reads memo entry ", index, ", which was never stored");
    stack_.push_back(it->second);
    return Status::Ok();
  }
  // callable(*args): _codecs.encode(text, 'latin1') is its bytes; any other
  // call is kept as an object for the caller to recognise.
  Status Call(PickleValue* callable, PickleValue* args) {
    if (args->kind != Kind::kTuple) return Error("calls with a ", PickleValue::KindName(args->kind), ", not a tuple");
    if (callable->kind == Kind::kGlobal && callable->text == "_codecs.encode" && !args->items.empty() &&
        args->items[0]->kind == Kind::kText) {
      std::string bytes;
      if (!Latin1(args->items[0]->text, &bytes)) return Error("_codecs.encode of text beyond latin-1");
      return Push(Kind::kBytes, 0, std::move(bytes));
    }
    AMP_ASSIGN_OR_RETURN(PickleValue * obj, New(Kind::kObject));
    AMP_ASSIGN_OR_RETURN(PickleValue * none, New(Kind::kNone));
    obj->items = {callable, args, none};
    stack_.push_back(obj);
    return Status::Ok();
  }
  Status SetItems(PickleValue* dict, const std::vector<PickleValue*>& kv) {
    if (kv.size() % 2) return Error("sets dict items from an odd count of values");
    dict->items.insert(dict->items.end(), kv.begin(), kv.end());
    return Status::Ok();
  }

  Status Step(unsigned char op) {
    switch (op) {
      case 0x80: {  // PROTO
        AMP_ASSIGN_OR_RETURN(uint64_t v, Uint(1));
        if (v < 2 || v > 5) return Error("protocol ", v, " (amptrain reads 2 to 5)");
        return Status::Ok();
      }
      case 0x95: return Take(8).status();  // FRAME: a hint, the bytes follow inline
      case '(': marks_.push_back(stack_.size()); return Status::Ok();
      case '0': return Pop().status();
      case '1': return PopMark().status();
      case '2': {
        if (stack_.size() <= Floor()) return Error("DUP on an empty stack");
        stack_.push_back(stack_.back());
        return Status::Ok();
      }
      case 'N': return Push(Kind::kNone);
      case 0x88: return Push(Kind::kBool, 1);
      case 0x89: return Push(Kind::kBool, 0);
      case 'K': { AMP_ASSIGN_OR_RETURN(uint64_t v, Uint(1)); return Push(Kind::kInt, static_cast<int64_t>(v)); }
      case 'M': { AMP_ASSIGN_OR_RETURN(uint64_t v, Uint(2)); return Push(Kind::kInt, static_cast<int64_t>(v)); }
      case 'J': {
        AMP_ASSIGN_OR_RETURN(uint64_t v, Uint(4));
        return Push(Kind::kInt, static_cast<int32_t>(static_cast<uint32_t>(v)));
      }
      case 0x8a: {  // LONG1: n little-endian two's-complement bytes
        AMP_ASSIGN_OR_RETURN(uint64_t n, Uint(1));
        if (n > 8) return Error("an integer of ", n, " bytes");
        AMP_ASSIGN_OR_RETURN(uint64_t v, Uint(static_cast<int>(n)));
        if (n > 0 && n < 8 && ((v >> (8 * n - 1)) & 1)) v |= ~uint64_t{0} << (8 * n);  // sign-extend
        return Push(Kind::kInt, static_cast<int64_t>(v));
      }
      case 'G': {  // BINFLOAT: big-endian double
        AMP_ASSIGN_OR_RETURN(std::string_view s, Take(8));
        uint64_t bits = 0;
        for (char c : s) bits = (bits << 8) | static_cast<unsigned char>(c);
        AMP_ASSIGN_OR_RETURN(PickleValue * v, New(Kind::kFloat));
        std::memcpy(&v->float_value, &bits, 8);
        stack_.push_back(v);
        return Status::Ok();
      }
      case 'U': case 'C': return Blob(Kind::kBytes, 1);  // SHORT_BINSTRING (Python 2 str), SHORT_BINBYTES
      case 'T': case 'B': return Blob(Kind::kBytes, 4);  // BINSTRING, BINBYTES
      case 0x8e: case 0x96: return Blob(Kind::kBytes, 8);  // BINBYTES8, BYTEARRAY8
      case 0x8c: return Blob(Kind::kText, 1);  // SHORT_BINUNICODE
      case 'X': return Blob(Kind::kText, 4);   // BINUNICODE
      case 0x8d: return Blob(Kind::kText, 8);  // BINUNICODE8
      case ')': return Tuple({});
      case 0x85: return TupleOfTop(1);
      case 0x86: return TupleOfTop(2);
      case 0x87: return TupleOfTop(3);
      case 't': { AMP_ASSIGN_OR_RETURN(auto items, PopMark()); return Tuple(std::move(items)); }
      case ']': return Push(Kind::kList);
      case '}': return Push(Kind::kDict);
      case 'l': case 'd': {
        AMP_ASSIGN_OR_RETURN(auto items, PopMark());
        AMP_ASSIGN_OR_RETURN(PickleValue * v, New(op == 'l' ? Kind::kList : Kind::kDict));
        stack_.push_back(v);
        if (op == 'd') return SetItems(v, items);
        v->items = std::move(items);
        return Status::Ok();
      }
      case 'a': {
        AMP_ASSIGN_OR_RETURN(PickleValue * item, Pop());
        AMP_ASSIGN_OR_RETURN(PickleValue * list, Top(Kind::kList, "APPEND"));
        list->items.push_back(item);
        return Status::Ok();
      }
      case 'e': {
        AMP_ASSIGN_OR_RETURN(auto items, PopMark());
        AMP_ASSIGN_OR_RETURN(PickleValue * list, Top(Kind::kList, "APPENDS"));
        list->items.insert(list->items.end(), items.begin(), items.end());
        return Status::Ok();
      }
      case 's': {
        AMP_ASSIGN_OR_RETURN(PickleValue * value, Pop());
        AMP_ASSIGN_OR_RETURN(PickleValue * key, Pop());
        AMP_ASSIGN_OR_RETURN(PickleValue * dict, Top(Kind::kDict, "SETITEM"));
        return SetItems(dict, {key, value});
      }
      case 'u': {
        AMP_ASSIGN_OR_RETURN(auto items, PopMark());
        AMP_ASSIGN_OR_RETURN(PickleValue * dict, Top(Kind::kDict, "SETITEMS"));
        return SetItems(dict, items);
      }
      case 'c': {  // GLOBAL module\nname\n: a reference, never imported
        AMP_ASSIGN_OR_RETURN(std::string module, Line());
        AMP_ASSIGN_OR_RETURN(std::string name, Line());
        return Push(Kind::kGlobal, 0, module + "." + name);
      }
      case 0x93: {  // STACK_GLOBAL
        AMP_ASSIGN_OR_RETURN(PickleValue * name, Pop());
        AMP_ASSIGN_OR_RETURN(PickleValue * module, Pop());
        if (module->kind != Kind::kText || name->kind != Kind::kText) return Error("STACK_GLOBAL of non-text names");
        return Push(Kind::kGlobal, 0, module->text + "." + name->text);
      }
      case 'R': case 0x81: {  // REDUCE callable(*args); NEWOBJ cls.__new__(cls, *args)
        AMP_ASSIGN_OR_RETURN(PickleValue * args, Pop());
        AMP_ASSIGN_OR_RETURN(PickleValue * callable, Pop());
        return Call(callable, args);
      }
      case 'b': {  // BUILD: the state, kept as data
        AMP_ASSIGN_OR_RETURN(PickleValue * state, Pop());
        AMP_ASSIGN_OR_RETURN(PickleValue * obj, Top(Kind::kObject, "BUILD"));
        obj->items[2] = state;
        return Status::Ok();
      }
      case 'q': { AMP_ASSIGN_OR_RETURN(uint64_t i, Uint(1)); return Memo(i); }
      case 'r': { AMP_ASSIGN_OR_RETURN(uint64_t i, Uint(4)); return Memo(i); }
      case 0x94: return Memo(memo_.size());  // MEMOIZE: the next index
      case 'h': { AMP_ASSIGN_OR_RETURN(uint64_t i, Uint(1)); return Get(i); }
      case 'j': { AMP_ASSIGN_OR_RETURN(uint64_t i, Uint(4)); return Get(i); }
      default: {
        const bool printable = op >= 0x20 && op < 0x7f;
        return Error("opcode 0x", "0123456789abcdef"[op >> 4], "0123456789abcdef"[op & 15],
                     printable ? std::string(" '") + static_cast<char>(op) + "'" : std::string(),
                     " is outside the subset amptrain reads");
      }
    }
  }

  Status Blob(Kind kind, int length_bytes) {
    AMP_ASSIGN_OR_RETURN(uint64_t n, Uint(length_bytes));
    AMP_ASSIGN_OR_RETURN(std::string_view s, Take(n));
    return Push(kind, 0, std::string(s));
  }

  std::string_view b_;
  const std::string& what_;
  Pickle& out_;
  size_t pos_ = 0, op_at_ = 0, made_ = 0;
  std::vector<PickleValue*> stack_;
  std::vector<size_t> marks_;
  std::map<uint64_t, PickleValue*> memo_;
};

bool IsGlobal(const PickleValue* v, std::initializer_list<const char*> names) {
  if (v->kind != Kind::kGlobal) return false;
  for (const char* n : names)
    if (v->text == n) return true;
  return false;
}

}  // namespace

const char* PickleValue::KindName(Kind k) {
  switch (k) {
    case Kind::kNone: return "None";
    case Kind::kBool: return "bool";
    case Kind::kInt: return "int";
    case Kind::kFloat: return "float";
    case Kind::kBytes: return "bytes";
    case Kind::kText: return "str";
    case Kind::kTuple: return "tuple";
    case Kind::kList: return "list";
    case Kind::kDict: return "dict";
    case Kind::kGlobal: return "global";
    case Kind::kObject: return "object";
  }
  return "?";
}

const PickleValue* PickleValue::Find(std::string_view key) const {
  if (kind != Kind::kDict) return nullptr;
  for (size_t i = 0; i + 1 < items.size(); i += 2)
    if (IsText(items[i]) && items[i]->text == key) return items[i + 1];
  return nullptr;
}

PickleValue* Pickle::New(PickleValue::Kind kind) {
  values_.push_back(std::make_unique<PickleValue>());
  values_.back()->kind = kind;
  return values_.back().get();
}

StatusOr<std::unique_ptr<Pickle>> ParsePickle(std::string_view bytes, const std::string& what) {
  auto pickle = std::make_unique<Pickle>();
  Parser parser(bytes, what, *pickle);
  AMP_ASSIGN_OR_RETURN(pickle->root_, parser.Run());
  return pickle;
}

StatusOr<ir::Tensor> NumpyUInt8Array(const PickleValue& v, const std::string& what) {
  auto not_array = [&](const std::string& why) {
    return InvalidArgument(what, " is not a numpy array as numpy pickles one: ", why);
  };
  if (v.kind != Kind::kObject) return not_array(StrCat("a ", PickleValue::KindName(v.kind)));
  const PickleValue* callable = v.items[0];
  const PickleValue* args = v.items[1];
  const PickleValue *shape = nullptr, *dtype = nullptr, *data = nullptr;
  bool fortran = false;
  if (IsGlobal(callable, {"numpy.core.multiarray._reconstruct", "numpy._core.multiarray._reconstruct"})) {
    // BUILD's state: ([version,] shape, dtype, is_fortran, raw bytes).
    const PickleValue* st = v.items[2];
    if (st->kind != Kind::kTuple || (st->items.size() != 4 && st->items.size() != 5))
      return not_array("its state is not (version, shape, dtype, order, data)");
    const size_t o = st->items.size() - 4;
    shape = st->items[o];
    dtype = st->items[o + 1];
    fortran = st->items[o + 2]->kind == Kind::kBool && st->items[o + 2]->int_value != 0;
    data = st->items[o + 3];
  } else if (IsGlobal(callable, {"numpy.core.numeric._frombuffer", "numpy._core.numeric._frombuffer"})) {
    // Protocol 5: _frombuffer(buffer, dtype, shape, order).
    if (args->items.size() != 4) return not_array("_frombuffer without (buffer, dtype, shape, order)");
    data = args->items[0];
    dtype = args->items[1];
    shape = args->items[2];
    fortran = args->items[3]->kind == Kind::kText && args->items[3]->text == "F";
  } else {
    return not_array(StrCat("made by ", callable->kind == Kind::kGlobal ? callable->text : "a non-global"));
  }
  // dtype: numpy.dtype('u1', ...) (with its state after BUILD).
  if (dtype->kind != Kind::kObject || !IsGlobal(dtype->items[0], {"numpy.dtype"}) ||
      dtype->items[1]->items.empty() || !IsText(dtype->items[1]->items[0]))
    return not_array("its dtype is not a numpy.dtype");
  const std::string& type = dtype->items[1]->items[0]->text;
  if (type != "u1" && type != "|u1" && type != "uint8" && type != "B")
    return Unimplemented(what, " holds numpy dtype '", type, "'; amptrain reads uint8 ('u1') arrays here");
  if (shape->kind != Kind::kTuple) return not_array("its shape is not a tuple");
  std::vector<int64_t> dims;
  int64_t n = 1;
  for (const PickleValue* d : shape->items) {
    if (d->kind != Kind::kInt || d->int_value < 0 || d->int_value > (int64_t{1} << 40))
      return not_array("a dim is not a size");
    dims.push_back(d->int_value);
    if (!ir::CheckedMul(n, d->int_value, &n) || n > (int64_t{1} << 40)) return not_array("too many elements");
  }
  if (fortran && dims.size() > 1) return Unimplemented(what, " is a Fortran-order array; amptrain reads C order");
  if (!IsText(data) || static_cast<int64_t>(data->text.size()) != n)
    return not_array(StrCat("its data has ", IsText(data) ? data->text.size() : 0, " bytes for ", n, " elements"));
  AMP_ASSIGN_OR_RETURN(ir::Tensor t, ir::Tensor::Zeros(ir::DType::kUInt8, dims));
  std::memcpy(t.raw(), data->text.data(), data->text.size());
  return t;
}

StatusOr<ir::Tensor> IntList(const PickleValue& v, const std::string& what) {
  if (v.kind != Kind::kList && v.kind != Kind::kTuple)
    return InvalidArgument(what, " is a ", PickleValue::KindName(v.kind), ", expected a list of ints");
  AMP_ASSIGN_OR_RETURN(ir::Tensor t, ir::Tensor::Zeros(ir::DType::kInt64, {static_cast<int64_t>(v.items.size())}));
  for (size_t i = 0; i < v.items.size(); ++i) {
    if (v.items[i]->kind != Kind::kInt)
      return InvalidArgument(what, " item ", i, " is a ", PickleValue::KindName(v.items[i]->kind), ", expected an int");
    t.data<int64_t>()[i] = v.items[i]->int_value;
  }
  return t;
}

}  // namespace amptrain::executor::data
